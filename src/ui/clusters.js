// The clusters page: every cluster of every provider, its labels,
// connectivity, last contact and what is deployed there.
import {
  h, api, enc, every, badge, readyBadge, when, countAll, unreachableBadge, view, setLive, clearError, showError, follow, ApiError,
} from './lib.js';

export async function render(ctx) {
  const { signal } = ctx;
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
  ctx.onCleanup(every(5000, refresh));
  setLive(true, 'refreshed every 5 s');
}
