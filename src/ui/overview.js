// The start page: every deployment intent group with its state and readiness.
import {
  h, api, enc, every, badge, readyBadge, when, countAll, unreachableBadge, view, setLive, clearError, showError, follow, ApiError,
} from './lib.js';

export async function render(ctx) {
  const { signal } = ctx;
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
  ctx.onCleanup(every(5000, () => refresh().catch(showError)));
  setLive(true, 'refreshed every 5 s');
}
