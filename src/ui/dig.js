// One deployment intent group: its clusters × apps, live from one status
// stream (output=clusters), problems first, filtered and grouped from the
// URL (#/dig/P/CA/V/DIG?state=unreachable&group=provider), the rollout's
// waves, and the drill-down of one cell.
import { h, api, enc, badge, when, view, clearError, naturalCompare } from './lib.js';
import { digActions } from './operate.js';
import {
  followClusters, sortClusters, matcher, rowsOf, filterKeys, problemOrder, stateWords, clusterKey, cellOf, cellState,
} from './dig-data.js';
import { createGrid } from './dig-grid.js';
import { rolloutPanel } from './dig-rollout.js';
import { drillDown } from './dig-drill.js';

const stateLabels = {
  '': 'All clusters', problems: 'Any problem', failed: 'Failed', notReady: 'Not ready', unreachable: 'Unreachable',
  stale: 'Stale', drifted: 'Drifted', pending: 'Pending', ready: 'Ready',
};
const groupLabels = { '': 'No grouping', provider: 'Provider', label: 'Labels', wave: 'Rollout wave' };
const countWords = {
  failed: 'failed', unreachable: 'unreachable', stale: 'stale', drifted: 'drifted', notReady: 'not ready', pending: 'pending',
};

// "Ready on 4 of 5 clusters, 1 unreachable": never Ready while a cluster
// is unreachable, stale or anything else.
export function summaryText(cc, readyStatus) {
  if (!cc || !cc.total) return readyStatus || '—';
  const rest = problemOrder.filter((k) => cc[k]).map((k) => `${cc[k]} ${countWords[k]}`);
  return `Ready on ${cc.ready} of ${cc.total} cluster${cc.total === 1 ? '' : 's'}` + (rest.length ? ', ' + rest.join(', ') : '');
}

// Marks for bench/console: the frame after the change has been drawn.
const afterPaint = (fn) => requestAnimationFrame(() => setTimeout(fn, 0));

function readFilters() {
  const i = location.hash.indexOf('?');
  const sp = new URLSearchParams(i < 0 ? '' : location.hash.slice(i + 1));
  return Object.fromEntries(filterKeys.map((k) => [k, sp.get(k) || '']));
}

export async function render(ctx) {
  const { signal } = ctx;
  const [p, ca, v] = ctx.params;
  const dig = (ctx.params[3] || '').split('?')[0];
  const base = `/v2/projects/${enc(p)}/composite-apps/${enc(ca)}/${enc(v)}/deployment-intent-groups/${enc(dig)}`;
  // The DIG itself and its clusters are asked at once: at 10,000 clusters the
  // clusters' answer is what the first paint waits for.
  const specAsked = api(base, signal);
  specAsked.catch(() => {});  // awaited below
  let driftPolicy = 'report';
  const f = readFilters();
  let doc = null;
  let sorted = [];
  let selected = null;  // {key, app}
  let drill = null;
  let firstPaint = true;

  const head = h('div', { class: 'dig-head' });
  const rollout = h('div');
  const shown = h('span', { class: 'muted', id: 'shown', 'aria-live': 'polite' });
  const empty = h('p', { class: 'muted', id: 'empty' });
  const drillBox = h('div');
  const historyBox = h('div');
  const grid = createGrid((c, app) => open(c, app));

  // Filters: selects and a search box, all in the URL.
  const select = (name, labels) => h('select', { id: 'f-' + name, 'aria-label': name, onchange: (ev) => setFilter(name, ev.target.value) },
    Object.entries(labels).map(([k, t]) => h('option', { value: k, selected: f[name] === k }, t)));
  const appSel = select('app', { '': 'Any app' });
  const labelSel = select('label', { '': 'Any label' });
  const search = h('input', {
    type: 'search', id: 'f-q', placeholder: 'Cluster name…', 'aria-label': 'search cluster name', value: f.q,
    oninput: (ev) => setFilter('q', ev.target.value),
  });
  // A link to one cluster (the overview's problems): shown, and cleared with a click.
  const onlyCluster = h('button', {
    type: 'button', id: 'f-cluster', hidden: !f.cluster, title: 'show every cluster again',
    onclick: () => { setFilter('cluster', ''); onlyCluster.hidden = true; },
  }, `cluster ${f.cluster} ✕`);
  const toolbar = h('div', { class: 'toolbar', role: 'search' },
    h('label', {}, 'Show ', select('state', stateLabels)), h('label', {}, 'App ', appSel),
    h('label', {}, 'Label ', labelSel), h('label', {}, 'Group by ', select('group', groupLabels)), search, onlyCluster, shown);
  let optionSig = '';
  const setOptions = (sel, values, any) => {
    const cur = f[sel.id.slice(2)];
    const all = cur && !values.includes(cur) ? [...values, cur] : values;
    sel.replaceChildren(h('option', { value: '' }, any), ...all.map((x) => h('option', { value: x, selected: x === cur }, x)));
  };

  view.replaceChildren(h('div', { class: 'dig-page' },
    h('h1', {}, `${p} / ${ca} / ${v} / ${dig}`),
    head, rollout, toolbar,
    h('div', { class: 'legend' }, ['failed', 'unreachable', 'stale', 'drifted', 'notReady', 'pending', 'ready', 'none']
      .map((s) => badge(s, stateWords[s]))),
    grid.el, empty, drillBox, historyBox));

  const paintGrid = () => {
    if (!doc) return;
    const t0 = performance.now();
    f.match = matcher(doc, f);
    f.waves = ((doc.rollout || {}).waves || []).map((w) => w.name);
    const { rows, shown: n } = rowsOf(sorted, f);
    grid.set(doc, rows, selected);
    const total = doc.clusters.length;
    shown.textContent = n === total ? `${total} cluster${total === 1 ? '' : 's'}` : `${n} of ${total} clusters`;
    grid.el.hidden = total === 0;
    empty.hidden = total !== 0 && n !== 0;
    const actions = ((doc.states || {}).actions) || [];
    empty.textContent = total === 0 ? (actions.some((a) => a.instance) ? 'Nothing deployed by the latest operation.' : 'Not instantiated yet.')
      : 'No cluster matches these filters.';
    return performance.now() - t0;
  };

  const setFilter = (name, value) => {
    f[name] = value;
    const qs = new URLSearchParams();
    for (const k of filterKeys) if (f[k]) qs.set(k, f[k]);
    const hash = `#/dig/${enc(p)}/${enc(ca)}/${enc(v)}/${enc(dig)}` + (qs.toString() ? '?' + qs : '');
    window.history.replaceState(null, '', hash);
    if (name !== 'q') grid.toTop();
    performance.mark('eco-filter-start');
    paintGrid();
    afterPaint(() => {
      performance.mark('eco-filter-painted');
      performance.measure('eco-filter', 'eco-filter-start', 'eco-filter-painted');
    });
  };

  const open = (c, app) => {
    const key = clusterKey(c);
    if (!app) {
      // The row's worst placed cell.
      const order = [...problemOrder, 'ready'];
      let worst = Infinity;
      doc.apps.forEach((a, i) => {
        const r = order.indexOf(cellState(c, cellOf(doc, c.cells[i])));
        if (c.cells[i] && r < worst) [worst, app] = [r, a];
      });
      if (!app) return;
    }
    if (drill) drill.stop();
    selected = { key, app };
    drill = drillDown(base, app, c.clusterProvider, c.cluster, driftPolicy);
    drillBox.replaceChildren(drill.el);
    paintGrid();
  };
  ctx.onCleanup(() => { if (drill) drill.stop(); });

  const renderHead = () => {
    const actions = ((doc.states || {}).actions) || [];
    const last = actions[actions.length - 1] || {};
    const revision = [...actions].reverse().find((a) => a.revision !== undefined);
    const ro = doc.rollout;
    const cc = doc.clusterCounts || {};
    head.replaceChildren(h('div', { class: 'summary' },
      h('div', {}, h('span', {}, 'State'), h('b', { id: 'dig-state' }, last.state || 'Created')),
      h('div', {}, h('span', {}, 'Revision'), h('b', { id: 'dig-revision' }, revision ? String(revision.revision) : '—')),
      h('div', {}, h('span', {}, 'Deployment'), doc.deployedStatus || '—'),
      h('div', {}, h('span', {}, 'Clusters'), h('b', { id: 'dig-ready', class: cc.total && cc.ready === cc.total ? 'ok' : '' },
        summaryText(cc, doc.readyStatus))),
      ro ? h('div', {}, h('span', {}, 'Rollout'), h('b', { id: 'dig-rollout' }, ro.state + (ro.wave && ro.state !== 'Complete' ? ` (wave ${ro.wave.name})` : ''))) : null,
      h('div', {}, h('span', {}, 'Apps'), String((doc.apps || []).length))),
    digActions({ project: p, compositeApp: ca, compositeAppVersion: v, dig, path: base }, doc));
    rollout.replaceChildren(ro ? rolloutPanel(ro, base) : '');
    historyBox.replaceChildren(h('h2', {}, 'History'), actions.length === 0
      ? h('p', { class: 'muted' }, 'No lifecycle operation yet.')
      : h('table', { id: 'history' },
        h('thead', {}, h('tr', {}, ['State', 'Revision', 'AppContext', 'Time'].map((s) => h('th', {}, s)))),
        h('tbody', {}, actions.slice().reverse().map((a) => h('tr', {},
          h('td', {}, a.state), h('td', {}, a.revision === undefined ? '' : String(a.revision)),
          h('td', {}, a.instance || ''), h('td', {}, when(a.time)))))));
  };

  // Documents may come faster than frames at 10,000 clusters: the latest wins.
  let pending = null;
  const onDoc = (d) => {
    if (firstPaint && !performance.getEntriesByName('eco-clusters-received').length) performance.mark('eco-clusters-received');
    const was = !pending;
    pending = d;
    if (was) requestAnimationFrame(apply);
  };
  const apply = () => {
    doc = pending;
    pending = null;
    clearError();
    sorted = sortClusters(doc.clusters || []);
    const apps = [...(doc.apps || [])];
    const labels = [...new Set(sorted.flatMap((c) => c.labels || []))].sort(naturalCompare);
    const sig = apps.join('\n') + '\t' + labels.join('\n');
    if (sig !== optionSig) {
      optionSig = sig;
      setOptions(appSel, apps, 'Any app');
      setOptions(labelSel, labels, 'Any label');
    }
    renderHead();
    paintGrid();
    if (firstPaint && sorted.length) {
      firstPaint = false;
      afterPaint(() => performance.mark('eco-grid-painted'));
    }
  };
  performance.mark('eco-clusters-asked');
  const stop = followClusters(base, onDoc);
  ctx.onCleanup(stop);
  try {
    const spec = await specAsked;  // a 404 for a DIG that does not exist, as the API says it
    driftPolicy = ((spec && spec.spec) || {}).driftPolicy || 'report';
  } catch (e) {
    stop();
    throw e;
  }
}
