// The DIG page's data: one compact row per cluster, both status views
// merged (GET DIG/status?output=clusters&watch=true), and what the page
// derives from it: the state of one cell, the order problems-first, the
// filters and groups.
import { follow, naturalCompare } from './lib.js';

export const defaultCellFields = ['total', 'ready', 'notReady', 'notPresent', 'stale', 'failed', 'pending', 'drifted', 'warnings'];

// Worst first, as eco orders a cluster's state (a stale cluster is one
// unreachable for longer than the grace): the order inside a group.
export const problemOrder = ['failed', 'stale', 'unreachable', 'drifted', 'notReady', 'pending'];
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
  if (c.stale || n.stale) return 'stale';
  if (c.unreachable) return 'unreachable';
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
export const filterKeys = ['state', 'app', 'label', 'q', 'cluster', 'group'];

export function matcher(doc, f) {
  const appIdx = f.app ? (doc.apps || []).indexOf(f.app) : -1;
  const q = (f.q || '').toLowerCase();
  return (c) => {
    if (f.state === 'problems' ? c.state === 'ready' : f.state && c.state !== f.state) return false;
    if (f.app && (appIdx < 0 || !c.cells[appIdx])) return false;
    if (f.label && !(c.labels || []).includes(f.label)) return false;
    if (q && !c.cluster.toLowerCase().includes(q) && !c.clusterProvider.toLowerCase().includes(q)) return false;
    // One cluster exactly (a problem's link): "provider+cluster".
    if (f.cluster && `${c.clusterProvider}+${c.cluster}` !== f.cluster) return false;
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
  // Waves in the rollout's order, other groups in natural order.
  const waves = (f.waves || []).map((w) => 'wave ' + w);
  const at = (g) => (waves.includes(g.name) ? waves.indexOf(g.name) : waves.length);
  for (const g of [...groups.values()].sort((a, b) => at(a) - at(b) || naturalCompare(a.name, b.name))) {
    rows.push({ group: g });
    for (const c of g.list) rows.push({ c });
  }
  return { rows, shown: keep.length };
}

// Follows the DIG's clusters document (docs/status.md, output=clusters).
export function followClusters(base, onDoc) {
  return follow(`${base}/status?output=clusters&watch=true`, onDoc);
}
