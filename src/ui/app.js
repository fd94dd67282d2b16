// The eco dashboard: a single page over eco's own /v2 API (the same calls
// any client makes), with live status from the status change stream
// (?watch=true, one JSON document per line). No framework and no build step:
// the files are compiled into the eco binary as they are.
'use strict';

const view = document.getElementById('view');
const errorBox = document.getElementById('error');
const liveBox = document.getElementById('live');
const tokenForm = document.getElementById('token-form');

let token = localStorage.getItem('eco.token') || '';
let cleanup = [];  // what the current view must stop when it is left

class ApiError extends Error {
  constructor(status, message, path) {
    super(message);
    this.status = status;
    this.path = path;
  }
}

// --- small helpers ---

// Builds an element; strings become text nodes (never HTML).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const enc = encodeURIComponent;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function headers() {
  return token ? { Authorization: 'Bearer ' + token } : {};
}

// The API's error body is {"code": N, "message": "..."}: shown as it is.
async function errorFrom(r, path) {
  const text = await r.text();
  let message = text;
  try {
    const body = JSON.parse(text);
    if (body && typeof body.message === 'string') message = body.message;
  } catch (e) { /* not JSON: the text itself */ }
  if (r.status === 401) tokenForm.hidden = false;
  return new ApiError(r.status, message || r.statusText, path);
}

async function api(path, signal) {
  const r = await fetch(path, { headers: headers(), signal });
  if (!r.ok) throw await errorFrom(r, path);
  return r.json();
}

function showError(e) {
  if (!e || e.name === 'AbortError') return;
  errorBox.hidden = false;
  errorBox.textContent = e instanceof ApiError
    ? `HTTP ${e.status} from ${e.path}: ${e.message}`
    : String(e.message || e);
}

function clearError() {
  errorBox.hidden = true;
  errorBox.textContent = '';
}

function setLive(on, text) {
  liveBox.hidden = false;
  liveBox.className = 'live ' + (on ? 'on' : 'off');
  liveBox.textContent = text;
}

// Follows a status change stream: calls onDoc for every line, reconnects
// after a lost connection, stops when the returned function is called.
function follow(path, onDoc) {
  const ctl = new AbortController();
  let stopped = false;
  (async () => {
    while (!stopped) {
      try {
        const r = await fetch(path, { headers: headers(), signal: ctl.signal });
        if (!r.ok) throw await errorFrom(r, path);
        setLive(true, 'live');
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          for (let i; (i = buf.indexOf('\n')) >= 0;) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line.trim()) onDoc(JSON.parse(line));
          }
        }
      } catch (e) {
        if (stopped) return;
        showError(e);
      }
      if (stopped) return;
      setLive(false, 'reconnecting…');
      await sleep(2000);
    }
  })();
  return () => {
    stopped = true;
    ctl.abort();
  };
}

function every(ms, fn) {
  let t = null;
  let stopped = false;
  const run = async () => {
    await fn();
    if (!stopped) t = setTimeout(run, ms);
  };
  run();
  return () => {
    stopped = true;
    clearTimeout(t);
  };
}

function badge(kind, text) {
  return h('span', { class: 'badge s-' + kind }, text);
}

function readyBadge(status) {
  if (!status) return badge('none', '—');
  return badge(status === 'Ready' ? 'ready' : 'progress', status);
}

function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? t : d.toLocaleString();
}

// Every resource a readyCounts object counts (Stale: a report older than the grace).
function countAll(c) {
  return c ? c.Ready + c.NotReady + c.NotPresent + (c.Stale || 0) : 0;
}

// The connectivity badge of a cluster eco cannot hear from: its agent
// silent past the grace, or the ready monitor's watches failing.
function unreachableBadge(u) {
  return h('span', { title: u.error }, badge('unreachable', 'Unreachable'), u.since ? ' since ' + when(u.since) : '');
}

// --- clusters ---

async function clustersView(signal) {
  const providers = await api('/v2/cluster-providers', signal);
  const root = h('div', {}, h('h1', {}, 'Clusters'));
  const body = h('tbody');
  root.append(
    h('p', { class: 'muted' },
      'Connectivity is what eco sees while it watches a cluster for a deployment; ' +
      'a cluster with nothing deployed is not contacted.'),
    h('table', { id: 'clusters' },
      h('thead', {}, h('tr', {}, ['Provider', 'Cluster', 'Labels', 'Connectivity', 'Last seen', 'Ready', 'Deployments']
        .map((t) => h('th', {}, t)))),
      body));
  const rows = [];
  for (const p of providers) {
    const name = p.metadata.name;
    const list = await api(`/v2/cluster-providers/${enc(name)}/clusters?withLabels=true`, signal);
    for (const c of list) {
      rows.push({ provider: name, cluster: c.metadata.name, labels: (c.labels || []).map((l) => l.clusterLabel) });
    }
  }
  if (rows.length === 0) body.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No clusters registered yet.')));
  view.replaceChildren(root);
  // Per-cluster summaries for the first rows only: one request each.
  const detailed = rows.slice(0, 200);
  if (rows.length > detailed.length) {
    root.append(h('p', { class: 'muted' }, `Ready counts are shown for the first ${detailed.length} of ${rows.length} clusters.`));
  }
  // Connectivity every 5 s (one request); the per-cluster summaries, which
  // cost the server a pass over every deployment each, every 30 s.
  let summaries = [];
  let tick = 0;
  const refresh = async () => {
    try {
      const down = await api('/v2/unreachable-clusters', signal);
      const byKey = new Map(down.map((u) => [u.clusterProvider + '+' + u.cluster, u]));
      if (tick++ % 6 === 0) {
        summaries = await Promise.all(detailed.map((r) =>
          api(`/v2/cluster-providers/${enc(r.provider)}/clusters/${enc(r.cluster)}/status?status=ready&output=summary`, signal)
            .catch((e) => ({ error: e }))));
      }
      body.replaceChildren(...rows.map((r, i) => {
        const s = summaries[i] || {};
        // An agent cluster's silence shows in its own status only.
        const u = byKey.get(r.provider + '+' + r.cluster) || s.unreachable;
        const deployments = s.deployments || [];
        let conn;
        if (u) conn = unreachableBadge(u);
        else if (deployments.length) conn = badge('ready', 'Reachable');
        else conn = badge('none', 'Not watched');
        const counts = s.readyCounts;
        const total = countAll(counts);
        return h('tr', { 'data-cluster': r.provider + '+' + r.cluster, 'data-connectivity': u ? 'Unreachable' : (deployments.length ? 'Reachable' : 'NotWatched') },
          h('td', {}, r.provider), h('td', {}, r.cluster),
          h('td', {}, r.labels.map((l) => h('span', { class: 'chip' }, l))),
          h('td', {}, conn),
          h('td', { class: 'last-seen' }, s.lastSeen ? when(s.lastSeen) : '—'),
          h('td', {}, s.error ? s.error.message : total ? [readyBadge(s.readyStatus), ` ${counts.Ready}/${total}`] : '—'),
          h('td', {}, deployments.map((d) => h('div', {},
            d.deploymentIntentGroup
              ? h('a', { href: `#/dig/${enc(d.project)}/${enc(d.compositeApp)}/${enc(d.compositeAppVersion)}/${enc(d.deploymentIntentGroup)}` },
                `${d.project}/${d.compositeApp}/${d.compositeAppVersion}/${d.deploymentIntentGroup}`)
              : `${d.project}/logical cloud ${d.logicalCloud}`))));
      }));
      clearError();
    } catch (e) {
      showError(e);
    }
  };
  cleanup.push(every(5000, refresh));
  setLive(true, 'refreshed every 5 s');
}

// --- deployment intent groups ---

async function digsView(signal) {
  const root = h('div', {}, h('h1', {}, 'Deployment intent groups'));
  const body = h('tbody');
  root.append(h('table', { id: 'digs' },
    h('thead', {}, h('tr', {}, ['Project', 'Composite app', 'Version', 'DIG', 'State', 'Ready', 'Resources', 'Last change']
      .map((t) => h('th', {}, t)))),
    body));
  view.replaceChildren(root);
  const digs = [];
  for (const p of await api('/v2/projects', signal)) {
    const project = p.metadata.name;
    for (const ca of await api(`/v2/projects/${enc(project)}/composite-apps`, signal)) {
      const name = ca.metadata.name;
      const version = (ca.spec || {}).compositeAppVersion;
      const base = `/v2/projects/${enc(project)}/composite-apps/${enc(name)}/${enc(version)}/deployment-intent-groups`;
      for (const d of await api(base, signal)) digs.push({ project, ca: name, version, dig: d.metadata.name, base });
    }
  }
  if (digs.length === 0) {
    body.append(h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No deployment intent groups yet.')));
    return;
  }
  const refresh = async () => {
    const rows = await Promise.all(digs.map(async (d) => {
      let s;
      try {
        s = await api(`${d.base}/${enc(d.dig)}/status?status=ready&output=summary`, signal);
      } catch (e) {
        s = { error: e };
      }
      const actions = ((s.states || {}).actions) || [];
      const last = actions[actions.length - 1] || {};
      const c = s.readyCounts;
      const total = countAll(c);
      const href = `#/dig/${enc(d.project)}/${enc(d.ca)}/${enc(d.version)}/${enc(d.dig)}`;
      return h('tr', { class: 'clickable', 'data-dig': `${d.project}/${d.ca}/${d.version}/${d.dig}`, onclick: () => { location.hash = href; } },
        h('td', {}, d.project), h('td', {}, d.ca), h('td', {}, d.version),
        h('td', {}, h('a', { href }, d.dig)),
        h('td', {}, s.error ? badge('failed', `HTTP ${s.error.status}`) : last.state || 'Created'),
        h('td', {}, s.error ? s.error.message : total ? readyBadge(s.readyStatus) : '—'),
        h('td', {}, total ? `${c.Ready}/${total} ready` : ''),
        h('td', {}, when(last.time)));
    }));
    body.replaceChildren(...rows);
  };
  cleanup.push(every(5000, () => refresh().catch(showError)));
  setLive(true, 'refreshed every 5 s');
}

// --- one DIG: apps × clusters, live ---

// Per app and cluster, what both views say.
function tally(readyDoc, deployedDoc) {
  const cells = new Map();  // app "\n" provider+cluster -> cell
  const apps = [];
  const clusters = new Map();  // key -> {provider, cluster}
  const cell = (app, c) => {
    const key = c.clusterProvider + '+' + c.cluster;
    if (!clusters.has(key)) clusters.set(key, { provider: c.clusterProvider, cluster: c.cluster });
    if (!apps.includes(app)) apps.push(app);
    const k = app + '\n' + key;
    if (!cells.has(k)) cells.set(k, { app, key, ready: 0, total: 0, failed: 0, resources: new Map() });
    return cells.get(k);
  };
  const resource = (x, r) => {
    const k = r.GVK.Kind + '/' + r.name;
    if (!x.resources.has(k)) x.resources.set(k, { kind: r.GVK.Kind, group: r.GVK.Group, name: r.name });
    return x.resources.get(k);
  };
  for (const a of (readyDoc && readyDoc.apps) || []) {
    for (const c of a.clusters) {
      const x = cell(a.name, c);
      x.connectivity = c.connectivity;
      x.connectivityError = c.connectivityError;
      x.unreachable = c.unreachable;
      x.lastSeen = c.lastSeen;
      x.stale = c.stale;
      for (const r of c.resources) {
        x.total++;
        if (r.readyStatus === 'Ready') x.ready++;
        resource(x, r).ready = r.readyStatus;
      }
    }
  }
  for (const a of (deployedDoc && deployedDoc.apps) || []) {
    for (const c of a.clusters) {
      const x = cell(a.name, c);
      if (c.connectivity) x.connectivity = c.connectivity;
      if (c.unreachable) x.unreachable = c.unreachable;
      if (c.lastSeen) x.lastSeen = c.lastSeen;
      if (c.stale) x.stale = true;
      if (c.connectivityError) x.connectivityError = c.connectivityError;
      for (const r of c.resources) {
        if (r.deployedStatus === 'Failed') x.failed++;
        resource(x, r).deployed = r.deployedStatus;
        // Fields the cluster does not declare, left out (fieldValidation Warn).
        if (r.warnings && r.warnings.length) {
          resource(x, r).warnings = r.warnings;
          x.warnings = (x.warnings || 0) + r.warnings.length;
        }
      }
    }
  }
  for (const x of cells.values()) {
    if (x.unreachable) x.state = 'unreachable';
    else if (x.failed || x.connectivity === 'Retrying') x.state = 'failed';
    else if (x.total > 0 && x.ready === x.total) x.state = 'ready';
    else x.state = 'progress';
  }
  return { apps, clusters, cells };
}

const stateWords = {
  ready: 'every resource Ready',
  progress: 'deploying or not ready yet',
  failed: 'failed, or eco is retrying the cluster',
  unreachable: 'cluster unreachable (or its report stale)',
  none: 'not placed here',
};

async function digView(signal, p, ca, v, dig) {
  const base = `/v2/projects/${enc(p)}/composite-apps/${enc(ca)}/${enc(v)}/deployment-intent-groups/${enc(dig)}`;
  await api(base, signal);  // a 404 for a DIG that does not exist, as the API says it
  const docs = { ready: null, deployed: null };
  let selected = null;  // {app, key}
  let detail = null;    // {app, key, kind, name, text}
  const head = h('div');
  const grid = h('div');
  const panel = h('div');
  const history = h('div');
  view.replaceChildren(h('div', {},
    h('h1', {}, `${p} / ${ca} / ${v} / ${dig}`),
    head,
    h('div', { class: 'legend' }, ['ready', 'progress', 'failed', 'unreachable', 'none']
      .map((s) => badge(s, stateWords[s]))),
    grid, panel, history));

  const render = () => {
    const r = docs.ready || {};
    const actions = ((r.states || {}).actions) || [];
    const last = actions[actions.length - 1] || {};
    const c = r.readyCounts;
    const total = countAll(c);
    const t = tally(docs.ready, docs.deployed);
    head.replaceChildren(h('div', { class: 'summary' },
      h('div', {}, h('span', {}, 'State'), h('b', { id: 'dig-state' }, last.state || 'Created')),
      h('div', {}, h('span', {}, 'Deployment'), r.deployedStatus || '—'),
      h('div', {}, h('span', {}, 'Ready'), h('b', { id: 'dig-ready' }, r.readyStatus || '—')),
      h('div', {}, h('span', {}, 'Resources ready'), total ? `${c.Ready} of ${total}` : '—'),
      h('div', {}, h('span', {}, 'Clusters'), String(t.clusters.size)),
      h('div', {}, h('span', {}, 'Apps'), String(t.apps.length))));

    if (t.apps.length === 0) {
      grid.replaceChildren(h('p', { class: 'muted' }, actions.some((a) => a.instance)
        ? 'Nothing deployed by the latest operation.' : 'Not instantiated yet.'));
    } else {
      const keys = [...t.clusters.keys()].sort();
      // More apps than clusters (a dozen charts on one cluster): a row per
      // app, so the grid grows down instead of off the screen.
      const byApp = t.apps.length > keys.length;
      const rowsOf = byApp ? t.apps : keys;
      const colsOf = byApp ? keys : t.apps;
      const cellOf = (row, col) => {
        const [a, key] = byApp ? [row, col] : [col, row];
        const x = t.cells.get(a + '\n' + key);
        if (!x) return h('td', { class: 'cell s-none', 'data-app': a, 'data-cluster': key, 'data-state': 'none' }, '–');
        const isSel = selected && selected.app === a && selected.key === key;
        return h('td', {
          class: `cell s-${x.state}${isSel ? ' selected' : ''}`,
          'data-app': a, 'data-cluster': key, 'data-state': x.state,
          title: `${a} on ${key}: ${stateWords[x.state]}` +
            (x.warnings ? `, ${x.warnings} field warning${x.warnings > 1 ? 's' : ''}` : ''),
          onclick: () => { selected = { app: a, key }; detail = null; render(); },
        }, `${x.ready}/${x.total}`, x.warnings ? h('span', { class: 'warn-mark', 'data-warnings': String(x.warnings) }, ' ⚠') : null);
      };
      grid.replaceChildren(h('div', { class: 'scroll' }, h('table', { class: 'grid', id: 'grid' },
        h('thead', {}, h('tr', {}, h('th', {}, byApp ? 'App \\ Cluster' : 'Cluster \\ App'), colsOf.map((c) => h('th', {}, c)))),
        h('tbody', {}, rowsOf.map((row) => h('tr', {},
          h('th', { class: 'cluster' }, row),
          colsOf.map((col) => cellOf(row, col))))))));
    }

    const x = selected && t.cells.get(selected.app + '\n' + selected.key);
    if (!x) {
      panel.replaceChildren();
    } else {
      const rows = [...x.resources.values()].map((res) => {
        const isSel = detail && detail.kind === res.kind && detail.name === res.name;
        return h('tr', {
          class: 'clickable' + (isSel ? ' selected' : ''), 'data-resource': `${res.kind}/${res.name}`,
          onclick: () => showDetail(x, res),
        }, h('td', {}, res.kind), h('td', {}, res.name),
        h('td', {}, res.ready ? badge(res.ready === 'Ready' ? 'ready' : res.ready === 'Stale' ? 'unreachable' : 'progress', res.ready) : '—'),
        h('td', {}, res.deployed ? badge(res.deployed === 'Failed' ? 'failed' : res.deployed === 'Applied' ? 'ready' : 'progress', res.deployed) : '—'),
        h('td', { class: 'warnings' }, (res.warnings || []).join('; ')));
      });
      panel.replaceChildren(h('div', { class: 'panel', id: 'drilldown' },
        h('h2', {}, `${x.app} on ${x.key}`),
        x.unreachable ? h('p', { class: 'error' },
          `The cluster has been unreachable${x.unreachable.since ? ' since ' + when(x.unreachable.since) : ''}: ` +
          `${x.unreachable.error}. ` +
          (x.stale ? 'Its last report is older than the grace, so nothing of it counts as Ready (Stale).'
            : 'What is shown is what it last reported.')) : null,
        x.connectivity === 'Retrying' ? h('p', { class: 'error' }, 'eco cannot reach the cluster and is retrying' +
          (x.connectivityError ? `: ${x.connectivityError}` : '.')) : null,
        h('p', { class: 'muted' }, `Connectivity: ${x.connectivity || 'Unknown'}. ` +
          (x.lastSeen ? `Last seen ${when(x.lastSeen)}. ` : '') + 'Click a resource for the object eco deployed.'),
        h('table', {}, h('thead', {}, h('tr', {}, ['Kind', 'Name', 'Ready', 'Deployed', 'Warnings'].map((s) => h('th', {}, s)))),
          h('tbody', {}, rows)),
        detail ? h('div', {}, h('h2', {}, `${detail.kind} ${detail.name}`), h('pre', { class: 'detail', id: 'detail' }, detail.text)) : null));
    }

    history.replaceChildren(h('h2', {}, 'History'), actions.length === 0
      ? h('p', { class: 'muted' }, 'No lifecycle operation yet.')
      : h('table', { id: 'history' },
        h('thead', {}, h('tr', {}, ['State', 'Revision', 'AppContext', 'Time'].map((s) => h('th', {}, s)))),
        h('tbody', {}, actions.slice().reverse().map((a) => h('tr', {},
          h('td', {}, a.state), h('td', {}, a.revision === undefined ? '' : String(a.revision)),
          h('td', {}, a.instance || ''), h('td', {}, when(a.time)))))));
  };

  const showDetail = async (x, res) => {
    detail = { kind: res.kind, name: res.name, text: 'Loading…' };
    render();
    const [provider, cluster] = [x.key.slice(0, x.key.indexOf('+')), x.key.slice(x.key.indexOf('+') + 1)];
    try {
      const doc = await api(`${base}/status?status=deployed&output=detail&app=${enc(x.app)}` +
        `&cluster=${enc(provider + '+' + cluster)}&resource=${enc(res.name)}`, signal);
      let obj = null;
      for (const a of doc.apps || []) {
        for (const c of a.clusters) {
          for (const r of c.resources) if (r.GVK.Kind === res.kind && r.name === res.name) obj = r.detail;
        }
      }
      detail.text = obj ? JSON.stringify(obj, null, 2)
        : 'eco keeps no copy of this object (the cluster made it, e.g. a Pod of a Deployment).';
    } catch (e) {
      detail.text = e instanceof ApiError ? `HTTP ${e.status}: ${e.message}` : String(e);
    }
    render();
  };

  render();
  cleanup.push(follow(`${base}/status?status=ready&watch=true`, (d) => { docs.ready = d; clearError(); render(); }));
  cleanup.push(follow(`${base}/status?status=deployed&watch=true`, (d) => { docs.deployed = d; render(); }));
}

// --- routing ---

async function route() {
  for (const stop of cleanup) stop();
  cleanup = [];
  const ctl = new AbortController();
  cleanup.push(() => ctl.abort());
  clearError();
  liveBox.hidden = true;
  const parts = (location.hash.replace(/^#\/?/, '') || 'digs').split('/').map(decodeURIComponent);
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.dataset.nav === (parts[0] === 'dig' ? 'digs' : parts[0]));
  }
  try {
    if (parts[0] === 'clusters') await clustersView(ctl.signal);
    else if (parts[0] === 'dig' && parts.length === 5) await digView(ctl.signal, ...parts.slice(1));
    else await digsView(ctl.signal);
  } catch (e) {
    showError(e);
    if (view.textContent === 'Loading…') view.replaceChildren();
  }
}

tokenForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  token = document.getElementById('token').value.trim();
  localStorage.setItem('eco.token', token);
  tokenForm.hidden = true;
  route();
});

window.addEventListener('hashchange', route);
route();
