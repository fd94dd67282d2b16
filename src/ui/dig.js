// One deployment intent group: apps × clusters, live from the status streams.
import {
  h, api, enc, every, badge, readyBadge, when, countAll, unreachableBadge, view, setLive, clearError, showError, follow, ApiError,
} from './lib.js';

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

export async function render(ctx) {
  const { signal } = ctx;
  const [p, ca, v, dig] = ctx.params;
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
  ctx.onCleanup(follow(`${base}/status?status=ready&watch=true`, (d) => { docs.ready = d; clearError(); render(); }));
  ctx.onCleanup(follow(`${base}/status?status=deployed&watch=true`, (d) => { docs.deployed = d; render(); }));
}
