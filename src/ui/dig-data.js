// The DIG page's data: one compact row per cluster, both status views
// merged (GET DIG/status?output=clusters&watch=true), and what the page
// derives from it: the state of one cell, the order problems-first, the
// filters and groups.
import { api, follow, enc, naturalCompare, ApiError } from './lib.js';

export const defaultCellFields = ['total', 'ready', 'notReady', 'notPresent', 'stale', 'failed', 'pending', 'drifted', 'warnings'];

// Worst first: the order of clusters inside a group and of the filters.
export const problemOrder = ['failed', 'unreachable', 'stale', 'drifted', 'notReady', 'pending'];
const rank = Object.fromEntries([...problemOrder, 'ready'].map((s, i) => [s, i]));

export const stateWords = {
  failed: 'failed, or eco is retrying the cluster',
  unreachable: 'cluster unreachable',
  stale: 'its last report is older than the grace',
  drifted: 'something changed on the cluster since eco applied it',
  notReady: 'not ready yet',
  pending: 'not applied yet',
  ready: 'every resource Ready',
  none: 'not placed here',
};

// A cell's numbers by name, from its array in cellFields order.
export function cellOf(doc, arr) {
  if (!arr) return null;
  const f = doc.cellFields || defaultCellFields;
  const n = {};
  for (let i = 0; i < f.length; i++) n[f[i]] = arr[i] || 0;
  return n;
}

// The worst of one app on one cluster; the cluster's own reachability first
// where the cell itself cannot be worse.
export function cellState(c, n) {
  if (!n) return 'none';
  if (n.failed || c.connectivity === 'Retrying') return 'failed';
  if (c.unreachable) return 'unreachable';
  if (c.stale || n.stale) return 'stale';
  if (n.drifted) return 'drifted';
  // Not present because not applied yet is pending, not a problem.
  if (n.notReady || n.notPresent > n.pending) return 'notReady';
  if (n.pending || n.total === 0) return 'pending';
  return n.ready === n.total ? 'ready' : 'notReady';
}

export const clusterKey = (c) => c.clusterProvider + '+' + c.cluster;

// Problems first, then natural order of provider+cluster (e-2 before e-10).
// Sorted once per document; filtering keeps the order.
export function sortClusters(list) {
  const keyed = list.map((c) => ({ c, r: rank[c.state] ?? 0, k: clusterKey(c) }));
  keyed.sort((a, b) => a.r - b.r || naturalCompare(a.k, b.k));
  return keyed.map((x) => x.c);
}

// The filters a URL carries (#/dig/p/ca/v/dig?state=unreachable&group=provider).
export const filterKeys = ['state', 'app', 'label', 'q', 'group'];

export function matcher(doc, f) {
  const appIdx = f.app ? (doc.apps || []).indexOf(f.app) : -1;
  const q = (f.q || '').toLowerCase();
  return (c) => {
    if (f.state === 'problems' ? c.state === 'ready' : f.state && c.state !== f.state) return false;
    if (f.app && (appIdx < 0 || !c.cells[appIdx])) return false;
    if (f.label && !(c.labels || []).includes(f.label)) return false;
    if (q && !c.cluster.toLowerCase().includes(q) && !c.clusterProvider.toLowerCase().includes(q)) return false;
    return true;
  };
}

export function groupName(c, group) {
  if (group === 'provider') return c.clusterProvider;
  if (group === 'wave') return c.wave ? 'wave ' + c.wave : 'no wave';
  if (group === 'label') return (c.labels || []).length ? [...c.labels].sort().join(', ') : 'no labels';
  return '';
}

// The grid's rows: group headers with their counts, then the group's
// clusters (already problems-first).
export function rowsOf(sorted, f) {
  const keep = [];
  const ok = f.match;
  for (const c of sorted) if (ok(c)) keep.push(c);
  if (!f.group) return { rows: keep.map((c) => ({ c })), shown: keep.length };
  const groups = new Map();
  for (const c of keep) {
    const g = groupName(c, f.group);
    if (!groups.has(g)) groups.set(g, { name: g, list: [], ready: 0, problems: 0 });
    const x = groups.get(g);
    x.list.push(c);
    if (c.state === 'ready') x.ready++;
    else x.problems++;
  }
  const rows = [];
  for (const g of [...groups.values()].sort((a, b) => naturalCompare(a.name, b.name))) {
    rows.push({ group: g });
    for (const c of g.list) rows.push({ c });
  }
  return { rows, shown: keep.length };
}

// Follows the DIG's clusters document. An eco without output=clusters
// (it answers 400) gets the same document composed from the ready and
// deployed streams, without labels, waves or drift counts.
export function followClusters(base, signal, onDoc) {
  let stop = () => {};
  let stopped = false;
  (async () => {
    try {
      await api(`${base}/status?output=clusters&cluster=${enc('-+-')}`, signal);
    } catch (e) {
      if (stopped || !(e instanceof ApiError) || e.status !== 400 || !/output/i.test(e.message)) {
        if (!stopped) stop = follow(`${base}/status?output=clusters&watch=true`, onDoc);
        return;
      }
      stop = composed(base, onDoc);
      return;
    }
    if (!stopped) stop = follow(`${base}/status?output=clusters&watch=true`, onDoc);
  })();
  return () => {
    stopped = true;
    stop();
  };
}

function composed(base, onDoc) {
  const docs = { ready: null, deployed: null };
  const emit = () => onDoc(compose(docs.ready, docs.deployed));
  const a = follow(`${base}/status?status=ready&watch=true`, (d) => { docs.ready = d; emit(); });
  const b = follow(`${base}/status?status=deployed&watch=true`, (d) => { docs.deployed = d; if (docs.ready) emit(); });
  return () => { a(); b(); };
}

function compose(ready, deployed) {
  const r = ready || {};
  const apps = [];
  const byKey = new Map();
  const f = defaultCellFields;
  const at = Object.fromEntries(f.map((k, i) => [k, i]));
  const row = (app, c) => {
    if (!apps.includes(app)) apps.push(app);
    const k = clusterKey(c);
    if (!byKey.has(k)) {
      byKey.set(k, { clusterProvider: c.clusterProvider, cluster: c.cluster, labels: [], delivery: 'push', cellsBy: new Map() });
    }
    const x = byKey.get(k);
    for (const p of ['connectivity', 'connectivityError', 'unreachable', 'lastSeen', 'stale']) if (c[p]) x[p] = c[p];
    if (!x.cellsBy.has(app)) x.cellsBy.set(app, f.map(() => 0));
    return x.cellsBy.get(app);
  };
  for (const a of r.apps || []) {
    for (const c of a.clusters) {
      const n = row(a.name, c);
      for (const res of c.resources) {
        n[at.total]++;
        const s = res.readyStatus;
        if (s === 'Ready') n[at.ready]++;
        else if (s === 'NotReady') n[at.notReady]++;
        else if (s === 'NotPresent') n[at.notPresent]++;
        else if (s === 'Stale') n[at.stale]++;
      }
    }
  }
  for (const a of (deployed && deployed.apps) || []) {
    for (const c of a.clusters) {
      const n = row(a.name, c);
      for (const res of c.resources) {
        const s = res.deployedStatus;
        if (s === 'Failed') n[at.failed]++;
        else if (s === 'Drifted') n[at.drifted]++;
        else if (s !== 'Applied') n[at.pending]++;
        n[at.warnings] += (res.warnings || []).length;
      }
    }
  }
  const counts = { total: 0, ready: 0, notReady: 0, failed: 0, unreachable: 0, stale: 0, drifted: 0, pending: 0 };
  const clusters = [...byKey.values()].map((x) => {
    x.cells = apps.map((a) => x.cellsBy.get(a) || null);
    delete x.cellsBy;
    let worst = 'ready';
    for (const arr of x.cells) {
      const s = cellState(x, cellOf({ cellFields: f }, arr));
      if (s !== 'none' && rank[s] < rank[worst]) worst = s;
    }
    x.state = worst;
    counts.total++;
    counts[worst]++;
    return x;
  });
  return {
    states: r.states, deployedStatus: (deployed || {}).deployedStatus || r.deployedStatus, readyStatus: r.readyStatus,
    apps, cellFields: f, clusterCounts: counts, rollout: r.rollout || (deployed || {}).rollout, clusters,
  };
}
