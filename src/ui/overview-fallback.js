// The start page's data on an eco without GET /v2/fleet: the same shape
// (docs/api.md, "Fleet") from the catalog and one status summary per DIG
// and logical cloud. Fewer facts (no providers, drift or staleness per
// cluster), and one request per DIG instead of one in all.
import { api, enc } from './lib.js';

function resourcesOf(c) {
  if (!c) return {};
  return { Ready: c.Ready || 0, NotReady: (c.NotReady || 0) + (c.NotPresent || 0), Stale: c.Stale || 0 };
}

function last(s) {
  const actions = ((s.states || {}).actions) || [];
  return actions[actions.length - 1] || {};
}

export async function fleetFromCatalog(signal) {
  const fleet = { digs: [], logicalClouds: [], problems: [] };
  for (const p of await api('/v2/projects', signal)) {
    const project = p.metadata.name;
    const pbase = `/v2/projects/${enc(project)}`;
    for (const ca of await api(`${pbase}/composite-apps`, signal)) {
      const name = ca.metadata.name;
      const version = (ca.spec || {}).compositeAppVersion;
      const base = `${pbase}/composite-apps/${enc(name)}/${enc(version)}/deployment-intent-groups`;
      const digs = await api(base, signal);
      fleet.digs.push(...await Promise.all(digs.map(async (d) => {
        const dig = d.metadata.name;
        const s = await api(`${base}/${enc(dig)}/status?status=ready&output=summary`, signal).catch(() => ({}));
        const l = last(s);
        const rev = [...(((s.states || {}).actions) || [])].reverse().find((a) => a.revision !== undefined);
        if (/Failed/.test(s.deployedStatus || '')) {
          fleet.problems.push({ kind: 'failed', severity: 'error', project, compositeApp: name, compositeAppVersion: version, dig, message: s.deployedStatus });
        }
        return {
          project, compositeApp: name, compositeAppVersion: version, name: dig, state: l.state || 'Created',
          lastChange: l.time, deployedStatus: s.deployedStatus || '', revision: rev ? rev.revision : undefined,
          readyStatus: s.readyStatus, resources: resourcesOf(s.readyCounts),
        };
      })));
    }
    const lcs = await api(`${pbase}/logical-clouds`, signal).catch(() => []);
    fleet.logicalClouds.push(...await Promise.all(lcs.map(async (lc) => {
      const lname = lc.metadata.name;
      const s = await api(`${pbase}/logical-clouds/${enc(lname)}/status?output=summary`, signal).catch(() => ({}));
      return { project, name: lname, level: (lc.spec || {}).level, state: last(s).state || 'Created', resources: resourcesOf(s.readyCounts) };
    })));
  }
  return fleet;
}
