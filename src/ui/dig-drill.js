// The drill-down of one cell of the DIG page: one app on one cluster, from
// the status queries filtered by app and cluster (both views, live), the
// object eco deployed (output=detail), what drifted field by field, and a
// resync of the cluster when the DIG only reports drift.
import { h, api, enc, badge, when, follow, ApiError } from './lib.js';
import { confirmCall, post } from './dig-confirm.js';

const readyKind = (s) => (s === 'Ready' ? 'ready' : s === 'Stale' ? 'unreachable' : 'progress');
const deployedKind = (s) => (s === 'Failed' ? 'failed' : s === 'Applied' ? 'ready' : s === 'Drifted' ? 'drifted' : 'progress');
const show = (v) => (v === undefined ? '(unset)' : typeof v === 'string' ? v : JSON.stringify(v));

// Answers {el, stop}; `driftPolicy` is the DIG's spec.driftPolicy.
export function drillDown(base, app, provider, cluster, driftPolicy) {
  const key = provider + '+' + cluster;
  const el = h('div', { class: 'panel', id: 'drilldown', 'data-app': app, 'data-cluster': key });
  const docs = { ready: null, deployed: null };
  let detail = null;  // {kind, name, text}
  const q = `app=${enc(app)}&cluster=${enc(key)}`;

  const render = () => {
    const resources = new Map();
    const where = { connectivity: null };
    const res = (r) => {
      const k = r.GVK.Kind + '/' + r.name;
      if (!resources.has(k)) resources.set(k, { kind: r.GVK.Kind, name: r.name });
      return resources.get(k);
    };
    for (const [view, doc] of Object.entries(docs)) {
      for (const a of (doc && doc.apps) || []) {
        for (const c of a.clusters) {
          for (const p of ['connectivity', 'connectivityError', 'unreachable', 'lastSeen', 'stale']) if (c[p]) where[p] = c[p];
          for (const r of c.resources) {
            const x = res(r);
            if (view === 'ready') x.ready = r.readyStatus;
            else {
              x.deployed = r.deployedStatus;
              if (r.warnings && r.warnings.length) x.warnings = r.warnings;
              if (r.drift) x.drift = r.drift;
            }
          }
        }
      }
    }
    const list = [...resources.values()];
    const drifted = list.filter((r) => r.deployed === 'Drifted');
    const rows = list.map((r) => {
      const sel = detail && detail.kind === r.kind && detail.name === r.name;
      return h('tr', {
        class: 'clickable' + (sel ? ' selected' : ''), 'data-resource': `${r.kind}/${r.name}`, tabindex: '0',
        onclick: () => showDetail(r), onkeydown: (ev) => { if (ev.key === 'Enter') showDetail(r); },
      }, h('td', {}, r.kind), h('td', {}, r.name),
      h('td', {}, r.ready ? badge(readyKind(r.ready), r.ready) : '—'),
      h('td', {}, r.deployed ? badge(deployedKind(r.deployed), r.deployed) : '—'),
      h('td', { class: 'warnings' }, (r.warnings || []).join('; ')));
    });
    const u = where.unreachable;
    el.replaceChildren(...[
      h('h2', {}, `${app} on ${key}`),
      u ? h('p', { class: 'error' },
        `The cluster has been unreachable${u.since ? ' since ' + when(u.since) : ''}: ${u.error}. ` +
        (where.stale ? 'Its last report is older than the grace, so nothing of it counts as Ready (Stale).'
          : 'What is shown is what it last reported.')) : null,
      where.connectivity === 'Retrying' ? h('p', { class: 'error' }, 'eco cannot reach the cluster and is retrying' +
        (where.connectivityError ? `: ${where.connectivityError}` : '.')) : null,
      h('p', { class: 'muted' }, `Connectivity: ${where.connectivity || 'Unknown'}. ` +
        (where.lastSeen ? `Last seen ${when(where.lastSeen)}. ` : '') + 'Select a resource for the object eco deployed.'),
      docs.ready || docs.deployed ? h('table', { class: 'resources' },
        h('thead', {}, h('tr', {}, ['Kind', 'Name', 'Ready', 'Deployed', 'Warnings'].map((s) => h('th', {}, s)))),
        h('tbody', {}, rows)) : h('p', { class: 'muted' }, 'Loading…'),
      drifted.length ? driftBlock(drifted) : null,
      detail ? h('div', {}, h('h2', {}, `${detail.kind} ${detail.name}`), h('pre', { class: 'detail', id: 'detail' }, detail.text)) : null,
    ].filter(Boolean));
  };

  // Field by field: what eco's manifest sets, what the cluster holds, who changed it.
  const driftBlock = (drifted) => h('div', { class: 'drift', id: 'drift' },
    h('h2', {}, 'Drift'),
    h('p', { class: 'muted' }, driftPolicy === 'enforce'
      ? 'driftPolicy is enforce: eco puts these back itself.'
      : 'driftPolicy is report: eco reports these and leaves the cluster as it is until it is repaired.'),
    drifted.map((r) => h('div', { class: 'drift-resource', 'data-resource': `${r.kind}/${r.name}` },
      h('h3', {}, `${r.kind} ${r.name}`, r.drift && r.drift.since ? h('span', { class: 'muted' }, ` since ${when(r.drift.since)}`) : null),
      r.drift && r.drift.deleted ? h('p', { class: 'bad' }, 'Deleted from the cluster.') : null,
      r.drift && (r.drift.fields || []).length ? h('table', { class: 'drift-fields' },
        h('thead', {}, h('tr', {}, ['Field', 'Desired (eco)', 'Live (cluster)', 'Changed by'].map((s) => h('th', {}, s)))),
        h('tbody', {}, r.drift.fields.map((f) => h('tr', { 'data-path': f.path },
          h('td', {}, h('code', {}, f.path)), h('td', {}, show(f.desired)), h('td', {}, show(f.live)),
          h('td', {}, f.manager || '—'))))) : null)),
    driftPolicy === 'enforce' ? null : h('button', {
      type: 'button', id: 'repair', class: 'primary',
      onclick: () => confirmCall({
        title: `Repair ${key}`,
        text: `Re-applies eco's manifests of the deployed revision on ${key} (every app of this DIG there), ` +
          'overwriting what was changed by hand. No new revision.',
        confirm: 'Repair',
        call: post(`${base}/resync`, { clusters: [{ clusterProvider: provider, cluster }] }),
      }),
    }, 'Repair'));

  const showDetail = async (r) => {
    detail = { kind: r.kind, name: r.name, text: 'Loading…' };
    render();
    try {
      const doc = await api(`${base}/status?status=deployed&output=detail&${q}&resource=${enc(r.name)}`);
      let obj = null;
      for (const a of doc.apps || []) {
        for (const c of a.clusters) {
          for (const x of c.resources) if (x.GVK.Kind === r.kind && x.name === r.name) obj = x.detail;
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
  const a = follow(`${base}/status?status=ready&${q}&watch=true`, (d) => { docs.ready = d; render(); });
  const b = follow(`${base}/status?status=deployed&${q}&watch=true`, (d) => { docs.deployed = d; render(); });
  return { el, stop: () => { a(); b(); } };
}
