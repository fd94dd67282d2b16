// A fleet plan (POST DIG/plan, docs/rollouts.md "Plans") as the
// confirmation dialog shows it: where each app goes and why, in which
// waves, and per cluster what is created, changed (the manifest diff) and
// deleted.
import { h } from './lib.js';

// Clusters whose changes are listed one by one; past this, counts only.
const LISTED = 200;

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
const show = (v) => (v === undefined ? '(absent)' : typeof v === 'string' ? v : JSON.stringify(v));

export function planSummary(plan) {
  const s = plan.summary || {};
  const op = plan.operation === 'update' ? `Update to revision ${plan.revision} (from ${plan.currentRevision})`
    : plan.operation === 'rollback' ? `Rollback revision ${plan.revision} (from ${plan.currentRevision})`
      : `Instantiate revision ${plan.revision}`;
  const what = [`${s.create || 0} to create`, `${s.change || 0} to change`, `${s.delete || 0} to delete`].join(', ');
  return `${op}: ${what}, on ${plural(s.clustersChanging || 0, 'cluster')} of ${s.clusters || 0}.`;
}

function where(plan) {
  const rows = (plan.apps || []).map((a) => h('tr', { 'data-app': a.name },
    h('th', { scope: 'row' }, a.name),
    h('td', {}, (a.clusters || []).length === 0 ? h('span', { class: 'muted' }, 'nowhere') : h('ul', { class: 'plain' },
      a.clusters.map((c) => h('li', { class: 'placed', 'data-cluster': c.cluster },
        h('span', { class: 'chip' + ((a.added || []).includes(c.cluster) ? ' added' : '') }, c.cluster),
        (a.added || []).includes(c.cluster) && plan.operation !== 'instantiate' ? h('span', { class: 'tag-add' }, ' new') : null,
        c.reason ? h('span', { class: 'muted' }, ' — ' + c.reason) : null,
        (c.customizedBy || []).length ? h('span', { class: 'muted' }, '; changed by ' + c.customizedBy.join(', ')) : null)))),
    h('td', {},
      (a.removed || []).map((c) => h('div', { class: 'removed', 'data-cluster': c }, h('span', { class: 'chip' }, c), ' removed')),
      (a.notPlaced || []).map((n) => h('div', { class: 'not-placed', 'data-cluster': n.cluster },
        h('span', { class: 'chip' }, n.cluster), ' not placed: ', n.reason)))));
  return h('table', { id: 'plan-where', class: 'plan' },
    h('thead', {}, h('tr', {}, ['App', 'Clusters, and why', 'Removed, not placed'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows));
}

function order(plan) {
  return h('ol', { id: 'plan-waves', class: 'waves' }, (plan.waves || []).map((w) =>
    h('li', { 'data-wave': w.name }, h('b', {}, w.name === 'all' ? 'All at once' : 'Wave ' + w.name), ': ',
      w.clusters.length > 12 ? `${w.clusters.slice(0, 12).join(', ')} and ${w.clusters.length - 12} more` : w.clusters.join(', '))));
}

function objectLine(sign, cls, o) {
  const name = `${o.kind} ${o.namespace ? o.namespace + '/' : ''}${o.name}`;
  const li = h('li', { class: cls, 'data-object': `${o.kind}/${o.name}` }, h('code', {}, `${sign} ${name}`), h('span', { class: 'muted' }, ` (${o.app})`));
  if (o.diff) {
    li.append(h('pre', { class: 'diff' }, o.diff.map((d) => `${d.path || '(whole object)'}: ${show(d.from)} → ${show(d.to)}`).join('\n')));
  }
  return li;
}

function changes(plan) {
  const changing = (plan.clusters || []).filter((c) => c.create.length + c.change.length + c.delete.length > 0);
  const same = (plan.clusters || []).length - changing.length;
  const box = h('div', { id: 'plan-changes' });
  if (!plan.clusters) {
    box.append(h('p', { class: 'muted' }, 'Counts only (a summary plan).'));
    return box;
  }
  const open = changing.length <= 8;
  for (const c of changing.slice(0, LISTED)) {
    const counts = [c.create.length && `${c.create.length} create`, c.change.length && `${c.change.length} change`,
      c.delete.length && `${c.delete.length} delete`].filter(Boolean).join(', ');
    box.append(h('details', { open, 'data-cluster': c.cluster },
      h('summary', {}, h('b', {}, c.cluster), h('span', { class: 'muted' }, ` wave ${c.wave} · ${counts}`)),
      h('ul', { class: 'objects' },
        c.create.map((o) => objectLine('+', 'create', o)),
        c.change.map((o) => objectLine('~', 'change', o)),
        c.delete.map((o) => objectLine('-', 'delete', o)))));
  }
  if (changing.length > LISTED) box.append(h('p', { class: 'muted' }, `and ${changing.length - LISTED} more clusters that change.`));
  if (!changing.length) box.append(h('p', { id: 'plan-nothing' }, 'Nothing changes on any cluster.'));
  if (same) box.append(h('p', { class: 'muted' }, `${plural(same, 'cluster')} unchanged.`));
  return box;
}

// The plan as the dialog's body.
export function planView(plan) {
  return h('div', { class: 'plan-view', id: 'plan', 'data-plan-id': plan.planId },
    h('p', { class: 'plan-summary' }, planSummary(plan)),
    (plan.notRun || []).length ? h('p', { class: 'warn' }, 'Not run by the plan: ' + plan.notRun.join('; ')) : null,
    h('h3', {}, 'Where'), where(plan),
    h('h3', {}, 'In which order'), order(plan),
    h('h3', {}, 'What changes, per cluster'), changes(plan),
    h('p', { class: 'muted small' }, `Plan ${String(plan.planId || '').slice(0, 12)}…: eco refuses the operation if it would now do anything else.`));
}
