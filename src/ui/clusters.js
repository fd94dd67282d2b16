// The clusters page: every cluster of every provider with its labels,
// delivery (push or agent), connectivity, last contact, agent version and
// what is deployed there, from one request (GET /v2/fleet/clusters,
// administrators). Filters and the page are in the URL
// (#/clusters?state=unreachable&delivery=agent&label=edge&provider=p&q=e1&page=2);
// natural order; 100 rows a page, so 10,000 clusters stay quick.
import {
  h, api, enc, every, badge, when, countAll, view, setLive, clearError, showError, ApiError, naturalCompare,
  digHref, mayAdminister, patch,
} from './lib.js';
import { registerForm, newTokenDialog } from './clusters-agent.js';

const POLL_MS = 5000;
const PAGE = 100;
const keys = ['state', 'delivery', 'provider', 'label', 'q', 'page'];

// For a caller eco refuses the fleet's clusters (403, a project user): the
// catalog's providers, clusters and labels, which every user may read.
async function fromCatalog(signal) {
  const rows = [];
  for (const p of await api('/v2/cluster-providers', signal)) {
    const name = p.metadata.name;
    for (const c of await api(`/v2/cluster-providers/${enc(name)}/clusters?withLabels=true`, signal)) {
      rows.push({ clusterProvider: name, cluster: c.metadata.name, labels: (c.labels || []).map((l) => l.clusterLabel) });
    }
  }
  return rows;
}

const key = (c) => c.clusterProvider + '+' + c.cluster;

function matches(c, f, full) {
  if (full && f.state === 'unreachable' && c.connectivity !== 'Unreachable') return false;
  if (full && f.state === 'stale' && !c.stale) return false;
  if (full && f.state === 'reachable' && c.connectivity !== 'Reachable') return false;
  if (full && f.state === 'notWatched' && c.connectivity !== 'NotWatched') return false;
  if (full && f.delivery && c.delivery !== f.delivery) return false;
  if (f.provider && c.clusterProvider !== f.provider) return false;
  if (f.label && !(c.labels || []).includes(f.label)) return false;
  if (f.q && !key(c).toLowerCase().includes(f.q.toLowerCase())) return false;
  return true;
}

function connectivity(c) {
  // An agent cluster whose agent never dialled in, nothing placed there yet.
  if (c.connectivity === 'NotConnected') return badge('none', 'Agent not connected yet');
  if (c.connectivity === 'Unreachable' || c.unreachable) {
    const u = c.unreachable || {};
    return h('span', { title: u.error || '' }, badge('unreachable', 'Unreachable'), u.since ? ' since ' + when(u.since) : '');
  }
  if (c.connectivity === 'Reachable') return badge('ready', 'Reachable');
  if (c.connectivity === 'NotWatched') return badge('none', 'Not watched');
  return h('span', { class: 'muted' }, '—');
}

function deploymentLink(d) {
  if (d.deploymentIntentGroup) {
    return h('div', {}, h('a', { href: digHref(d.project, d.compositeApp, d.compositeAppVersion, d.deploymentIntentGroup) },
      `${d.project}/${d.compositeApp}/${d.compositeAppVersion}/${d.deploymentIntentGroup}`));
  }
  return h('div', {}, `${d.project}/logical cloud ${d.logicalCloud}`);
}

function row(c, full) {
  const counts = c.readyCounts;
  const total = countAll(counts);
  return h('tr', { 'data-cluster': key(c), 'data-connectivity': c.connectivity || 'Unknown', 'data-delivery': c.delivery || '' },
    h('td', {}, c.clusterProvider), h('td', {}, c.cluster),
    h('td', {}, (c.labels || []).map((l) => h('a', { class: 'chip', href: '#/clusters?label=' + enc(l) }, l))),
    full ? [
      h('td', {}, c.delivery || '—', c.delivery === 'agent' && c.agentVersion ? h('span', { class: 'muted' }, ' ' + c.agentVersion) : null),
      h('td', {}, connectivity(c), c.stale ? [' ', badge('failed', 'Stale')] : null),
      h('td', { class: 'last-seen' }, c.lastSeen ? when(c.lastSeen) : '—'),
      h('td', {}, total ? `${counts.Ready}/${total} ready` : '—'),
      h('td', {}, (c.deployments || []).map(deploymentLink)),
      h('td', {}, c.delivery === 'agent' && mayAdminister()
        ? h('button', { type: 'button', 'data-op': 'new-token', onclick: () => newTokenDialog(c.clusterProvider, c.cluster) }, 'New token…') : null),
    ] : null);
}

export async function render(ctx) {
  const { signal } = ctx;
  const f = Object.fromEntries(keys.map((k) => [k, ctx.query.get(k) || '']));
  const body = h('tbody');
  const head = h('tr');
  const note = h('p', { class: 'muted', id: 'clusters-note' });
  const shown = h('span', { class: 'muted', id: 'shown', 'aria-live': 'polite' });
  const pager = h('div', { class: 'pager' });
  const providerSel = h('select', { id: 'f-provider', 'aria-label': 'provider' });
  const labelSel = h('select', { id: 'f-label', 'aria-label': 'label' });
  const setFilter = (k, v) => {
    f[k] = v;
    if (k !== 'page') f.page = '';
    const qs = new URLSearchParams();
    for (const x of keys) if (f[x]) qs.set(x, f[x]);
    const s = qs.toString();
    // The URL follows the filters without a new render (which would take the focus).
    history.replaceState(null, '', '#/clusters' + (s ? '?' + s : ''));
    draw();
  };
  const select = (id, label, options) => h('select', { id: 'f-' + id, 'aria-label': label, onchange: (ev) => setFilter(id, ev.target.value) },
    Object.entries(options).map(([k, t]) => h('option', { value: k, selected: f[id] === k }, t)));
  providerSel.addEventListener('change', (ev) => setFilter('provider', ev.target.value));
  labelSel.addEventListener('change', (ev) => setFilter('label', ev.target.value));
  // Connectivity and delivery only where eco told them (not from the catalog alone).
  const live = [
    h('label', {}, 'Show ', select('state', 'connectivity', { '': 'All', unreachable: 'Unreachable', stale: 'Stale', reachable: 'Reachable', notWatched: 'Not watched' })),
    h('label', {}, 'Delivery ', select('delivery', 'delivery', { '': 'Any', push: 'Push', agent: 'Agent' }))];
  const toolbar = h('div', { class: 'toolbar', role: 'search' }, live,
    h('label', {}, 'Provider ', providerSel), h('label', {}, 'Label ', labelSel),
    h('input', { type: 'search', id: 'f-q', placeholder: 'Cluster name…', 'aria-label': 'search cluster name', value: f.q,
      oninput: (ev) => setFilter('q', ev.target.value) }),
    shown);
  const registerBox = h('div');
  view.replaceChildren(h('div', { class: 'clusters-page' }, h('h1', {}, 'Clusters'), note, toolbar,
    h('div', { class: 'scroll' }, h('table', { id: 'clusters', class: 'fleet' }, h('thead', {}, head), body)), pager, registerBox));

  let rows = [];
  let full = true;
  let optionSig = '';
  const fillOptions = () => {
    const providers = [...new Set(rows.map((c) => c.clusterProvider))].sort(naturalCompare);
    const labels = [...new Set(rows.flatMap((c) => c.labels || []))].sort(naturalCompare);
    const sig = JSON.stringify([providers, labels]);
    if (sig === optionSig) return;
    optionSig = sig;
    const fill = (sel, values, cur, any) => sel.replaceChildren(h('option', { value: '' }, any),
      ...[...new Set([...values, ...(cur ? [cur] : [])])].map((v) => h('option', { value: v, selected: v === cur }, v)));
    fill(providerSel, providers, f.provider, 'Any');
    fill(labelSel, labels, f.label, 'Any');
    if (mayAdminister() && !registerBox.firstChild) registerBox.append(registerForm(providers, () => refresh()));
  };
  const draw = () => {
    for (const l of live) l.hidden = !full;
    head.replaceChildren(...(full
      ? ['Provider', 'Cluster', 'Labels', 'Delivery', 'Connectivity', 'Last seen', 'Ready', 'Deployments', '']
      : ['Provider', 'Cluster', 'Labels']).map((t) => h('th', { scope: 'col' }, t)));
    const list = rows.filter((c) => matches(c, f, full));
    const pages = Math.max(1, Math.ceil(list.length / PAGE));
    const page = Math.min(pages, Math.max(1, parseInt(f.page, 10) || 1));
    const slice = list.slice((page - 1) * PAGE, page * PAGE);
    patch(body, slice, key, (c) => row(c, full), () => h('tr', {}, h('td', { colspan: 9, class: 'muted' },
      rows.length ? 'No cluster matches these filters.' : 'No clusters registered yet.')));
    shown.textContent = `${list.length} of ${rows.length} clusters`;
    pager.replaceChildren(...(pages > 1 ? [
      h('button', { type: 'button', disabled: page <= 1, onclick: () => setFilter('page', String(page - 1)) }, '‹ Previous'),
      h('span', {}, ` page ${page} of ${pages} `),
      h('button', { type: 'button', disabled: page >= pages, onclick: () => setFilter('page', String(page + 1)) }, 'Next ›')] : []));
  };

  let catalog = false;  // a caller eco refuses /v2/fleet/clusters (403)
  let tick = 0;
  const refresh = async () => {
    if (!catalog) {
      try {
        rows = await api('/v2/fleet/clusters', signal);
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 403) throw e;
        catalog = true;
        full = false;
        note.textContent = `Only providers, clusters and labels are shown: eco answered ${e.status} to the fleet's cluster list ` +
          `("${e.message}"). Connectivity, last contact and what is deployed on each cluster span every project, ` +
          'so only an administrator may read them.';
        note.classList.add('notice');
      }
    }
    // The catalog changes seldom: read again every minute.
    if (catalog && (tick % 12 === 0 || !rows.length)) rows = await fromCatalog(signal);
    tick += 1;
    if (!catalog) note.textContent = 'Connectivity is what eco sees while it watches a cluster for a deployment, or hears from its agent; ' +
      'a push cluster with nothing deployed is not contacted.';
    rows.sort((a, b) => naturalCompare(key(a), key(b)));
    fillOptions();
    draw();
    clearError();
  };
  setLive(true, `refreshed every ${POLL_MS / 1000} s`);
  ctx.onCleanup(every(POLL_MS, () => refresh().catch(showError),
    (wait) => setLive(true, `refreshed every ${Math.round(wait / 1000)} s`)));
}
