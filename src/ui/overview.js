// The start page: the whole fleet from one request (GET /v2/fleet), polled
// every few seconds. Problems first, each one link from its cause (the DIG
// page filtered to it); every DIG and logical cloud with its state and its
// resources by status as a stacked bar; clusters per provider.
import {
  h, api, enc, every, badge, when, view, setLive, clearError, showError, digHref, mayAdminister, patch,
} from './lib.js';
import { lcActions } from './operate.js';

const POLL_MS = 3000;
// The resource states, in the order the bars stack them.
export const resourceStates = ['Ready', 'NotReady', 'Failed', 'Stale', 'Drifted', 'Pending'];

// A problem's link: the DIG page filtered to the clusters concerned
// (#/dig/P/CA/V/DIG?state=unreachable&cluster=edges%2Bedge1), the clusters page for
// a logical cloud or a cluster alone.
const digFilter = { failed: 'failed', retrying: 'failed', unreachable: 'unreachable', stale: 'stale', drifted: 'drifted' };
export function problemHref(p) {
  const qs = new URLSearchParams();
  if (p.dig) {
    if (digFilter[p.kind]) qs.set('state', digFilter[p.kind]);
    if (p.cluster) qs.set('cluster', `${p.clusterProvider}+${p.cluster}`);
    const s = qs.toString();
    return digHref(p.project, p.compositeApp, p.compositeAppVersion, p.dig) + (s ? '?' + s : '');
  }
  if (p.kind === 'unreachable' || p.kind === 'stale') qs.set('state', p.kind);
  if (p.clusterProvider) qs.set('provider', p.clusterProvider);
  if (p.cluster) qs.set('q', p.cluster);
  const s = qs.toString();
  return '#/clusters' + (s ? '?' + s : '');
}

const kindWords = {
  failed: 'Failed', retrying: 'Retrying', unreachable: 'Unreachable', stale: 'Stale', drifted: 'Drifted',
  approval: 'Waiting for approval', paused: 'Paused',
};

function problemItem(p) {
  const what = p.dig ? `${p.project}/${p.compositeApp}/${p.compositeAppVersion}/${p.dig}`
    : p.logicalCloud ? `${p.project}/logical cloud ${p.logicalCloud}` : '';
  const where = p.cluster ? `${p.clusterProvider}+${p.cluster}` : p.count ? `${p.count} cluster${p.count === 1 ? '' : 's'}` : '';
  return h('li', { class: 'problem sev-' + (p.severity || 'warning'), 'data-kind': p.kind },
    h('a', { href: problemHref(p) },
      h('span', { class: 'kind' }, kindWords[p.kind] || p.kind),
      h('span', { class: 'what' }, [what, where].filter(Boolean).join(' · ')),
      p.message ? h('span', { class: 'message' }, p.message) : null,
      p.since ? h('span', { class: 'since muted' }, 'since ' + when(p.since)) : null));
}

// Resources by status as one bar; each segment's width is its share, and
// the bar's label says the numbers for those who cannot see it.
export function stackedBar(counts) {
  const c = counts || {};
  const total = resourceStates.reduce((n, k) => n + (c[k] || 0), 0);
  if (!total) return h('span', { class: 'muted' }, '—');
  const words = resourceStates.filter((k) => c[k]).map((k) => `${c[k]} ${k}`).join(', ');
  const bar = h('div', { class: 'bar', role: 'img', 'aria-label': words, title: words });
  for (const k of resourceStates) {
    if (!c[k]) continue;
    const seg = h('span', { class: 'seg r-' + k, 'data-state': k });
    seg.style.flexGrow = String(c[k]);
    bar.append(seg);
  }
  return h('div', { class: 'bar-cell' }, bar, h('span', { class: 'bar-text' }, `${c.Ready || 0}/${total}`));
}

function clustersText(cc, readyStatus) {
  if (!cc || !cc.total) return readyStatus || '—';
  const rest = ['failed', 'unreachable', 'stale', 'drifted', 'notReady', 'pending'].filter((k) => cc[k])
    .map((k) => `${cc[k]} ${k === 'notReady' ? 'not ready' : k}`);
  return `${cc.ready}/${cc.total} ready` + (rest.length ? ', ' + rest.join(', ') : '');
}

function digRow(d) {
  const key = `${d.project}/${d.compositeApp}/${d.compositeAppVersion}/${d.name}`;
  const href = digHref(d.project, d.compositeApp, d.compositeAppVersion, d.name);
  const cc = d.clusters || {};
  const ro = d.rollout;
  return h('tr', { class: 'clickable', 'data-dig': key, onclick: (ev) => { if (ev.target.tagName !== 'A') location.hash = href; } },
    h('td', {}, d.project), h('td', {}, d.compositeApp), h('td', {}, d.compositeAppVersion),
    h('td', {}, h('a', { href }, d.name)),
    h('td', { class: 'state' }, d.state || 'Created'),
    h('td', {}, d.deployedStatus ? badge(/Failed/.test(d.deployedStatus) ? 'failed' : /ing$/.test(d.deployedStatus) ? 'progress' : 'ready', d.deployedStatus) : '—',
      d.revision ? h('span', { class: 'muted' }, ` rev ${d.revision}`) : null,
      ro ? h('div', { class: 'muted' }, `rollout ${ro.state}${ro.wave ? ', wave ' + (ro.wave.name || ro.wave) : ''}`) : null),
    h('td', { class: cc.total && cc.ready === cc.total ? 'ok' : '' }, clustersText(cc, d.readyStatus)),
    h('td', { class: 'bar-td' }, stackedBar(d.resources)),
    h('td', { class: 'when' }, when(d.lastChange)));
}

function lcRow(lc, refresh) {
  return h('tr', { 'data-lc': `${lc.project}/${lc.name}` },
    h('td', {}, lc.project), h('td', {}, lc.name), h('td', {}, lc.level === undefined ? '' : String(lc.level)),
    h('td', { class: 'state' }, lc.state || 'Created'),
    h('td', {}, lc.clusters === undefined ? '' : String(Array.isArray(lc.clusters) ? lc.clusters.length : lc.clusters)),
    h('td', { class: 'bar-td' }, stackedBar(lc.resources)),
    h('td', {}, mayAdminister() ? lcActions(lc, refresh) : h('span', { class: 'muted' }, '—')));
}

function providerCard(p) {
  const bits = [`${p.clusters} cluster${p.clusters === 1 ? '' : 's'}`, `${p.push || 0} push`, `${p.agent || 0} agent`];
  return h('a', { class: 'provider-card' + (p.unreachable || p.stale ? ' bad' : ''), href: '#/clusters?provider=' + enc(p.name), 'data-provider': p.name },
    h('b', {}, p.name), h('span', {}, bits.join(' · ')),
    p.unreachable ? h('span', { class: 'bad-text' }, `${p.unreachable} unreachable`) : null,
    p.stale ? h('span', { class: 'bad-text' }, `${p.stale} stale`) : null);
}

const legend = () => h('div', { class: 'legend', 'aria-hidden': 'true' },
  resourceStates.map((k) => h('span', {}, h('span', { class: 'swatch r-' + k }), k)));

export async function render(ctx) {
  const { signal } = ctx;
  const problems = h('ul', { class: 'problems', id: 'problems', 'aria-live': 'polite' });
  const providers = h('div', { class: 'providers', id: 'providers' });
  const digBody = h('tbody');
  const lcBody = h('tbody');
  const lcSection = h('section', { id: 'lc-section' }, h('h2', {}, 'Logical clouds'),
    h('div', { class: 'scroll' }, h('table', { id: 'logical-clouds', class: 'fleet' },
      h('thead', {}, h('tr', {}, ['Project', 'Name', 'Level', 'State', 'Clusters', 'Resources', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
      lcBody)));
  const providerSection = h('section', { id: 'provider-section' }, h('h2', {}, 'Clusters by provider'), providers);
  view.replaceChildren(h('div', { class: 'overview' },
    h('h1', {}, 'Fleet'),
    h('section', { 'aria-labelledby': 'problems-title' }, h('h2', { id: 'problems-title' }, 'Problems'), problems),
    providerSection,
    h('section', {}, h('h2', {}, 'Deployment intent groups'), legend(),
      h('div', { class: 'scroll' }, h('table', { id: 'digs', class: 'fleet' },
        h('thead', {}, h('tr', {}, ['Project', 'Composite app', 'Version', 'DIG', 'State', 'Deployment', 'Clusters', 'Resources', 'Last change']
          .map((t) => h('th', { scope: 'col' }, t)))),
        digBody))),
    lcSection));

  const refresh = async () => {
    const fleet = await api('/v2/fleet', signal);
    const ps = fleet.problems || [];
    patch(problems, ps, (p) => JSON.stringify(p), problemItem, () => h('li', { class: 'none muted' }, 'No problems across the fleet.'));
    const pv = fleet.providers;
    providerSection.hidden = !pv;
    if (pv) patch(providers, pv, (p) => p.name, providerCard, () => h('span', { class: 'muted' }, 'No cluster providers yet.'));
    const digs = fleet.digs || [];
    patch(digBody, digs, (d) => `${d.project}/${d.compositeApp}/${d.compositeAppVersion}/${d.name}`, digRow,
      () => h('tr', {}, h('td', { colspan: 9, class: 'muted' }, 'No deployment intent groups yet.')));
    const lcs = fleet.logicalClouds || [];
    lcSection.hidden = lcs.length === 0;
    patch(lcBody, lcs, (lc) => `${lc.project}/${lc.name}`, (lc) => lcRow(lc, () => refresh().catch(showError)), () => h('tr'));
    clearError();
  };
  setLive(true, `refreshed every ${POLL_MS / 1000} s`);
  ctx.onCleanup(every(POLL_MS, () => refresh().catch((e) => {
    if (e && e.name !== 'AbortError') setLive(false, 'refresh failed');
    showError(e);
  })));
}
