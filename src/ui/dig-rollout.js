// The rollout panel of the DIG page: the waves of a staged rollout (and of
// its rollback) with their progress, and the operator's buttons, each shown
// only in a state that allows it (docs/rollouts.md "Steering and watching").
import { h, badge, when } from './lib.js';
import { confirmCall, post } from './dig-confirm.js';

const running = ['Progressing', 'WaitingApproval', 'RollingBack'];

// What each button does, when it is offered, and what the dialog says.
const steering = [
  { op: 'pause', label: 'Pause', when: running,
    text: 'Nothing more is released; clusters in progress finish. Resume or abort afterwards.' },
  { op: 'resume', label: 'Resume', when: ['Paused'],
    text: 'The rollout goes on; the failures so far are accepted (only new ones count against maxFailures).' },
  { op: 'approve', label: 'Approve next wave', when: ['WaitingApproval'],
    text: 'The next wave starts.' },
  { op: 'abort', label: 'Abort', when: [...running, 'Paused'],
    text: 'The rollout ends as Failed (or rolls back, under onFailure: rollback); clusters not reached keep what they had.' },
];

const stateKind = (s) => ({
  Complete: 'ready', RolledBack: 'progress', Failed: 'failed', Paused: 'progress', WaitingApproval: 'progress',
}[s] || 'progress');

function elapsed(from, to) {
  if (!from) return '';
  const ms = (to ? Date.parse(to) : Date.now()) - Date.parse(from);
  if (!(ms >= 0)) return '';
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`;
}

function waveTable(waves, current) {
  return h('table', { class: 'waves' },
    h('thead', {}, h('tr', {}, ['Wave', 'Progress', 'Clusters', 'Done', 'Failed', 'Pending', 'Skipped', 'Left', 'Started', 'Completed', 'Took']
      .map((t) => h('th', {}, t)))),
    h('tbody', {}, waves.map((w) => {
      const total = w.clusters || 0;
      const bar = h('div', { class: 'bar', title: `${w.done} done, ${w.failed} failed of ${total}` });
      for (const [k, n] of [['done', w.done], ['failed', w.failed], ['skipped', w.skipped], ['left', w.left]]) {
        if (!n || !total) continue;
        const seg = h('span', { class: 'seg-' + k });
        seg.style.width = (100 * n / total) + '%';
        bar.append(seg);
      }
      return h('tr', { 'data-wave': w.name, class: w.name === current ? 'current' : '' },
        h('td', {}, w.name), h('td', {}, bar), h('td', {}, String(total)),
        h('td', {}, String(w.done || 0)), h('td', { class: w.failed ? 'bad' : '' }, String(w.failed || 0)),
        h('td', {}, String(w.pending || 0)), h('td', {}, String(w.skipped || 0)), h('td', {}, String(w.left || 0)),
        h('td', {}, when(w.startedAt)), h('td', {}, when(w.completedAt)),
        h('td', {}, w.startedAt ? elapsed(w.startedAt, w.completedAt) : ''));
    })));
}

// The panel for `ro` (status's rollout block); base is the DIG's path.
export function rolloutPanel(ro, base) {
  const buttons = steering.filter((s) => s.when.includes(ro.state)).map((s) => h('button', {
    type: 'button', 'data-op': s.op, class: s.op === 'abort' ? 'danger' : '',
    onclick: () => confirmCall({
      title: `${s.label}: rollout of revision ${ro.revision}`, text: s.text, confirm: s.label,
      call: post(`${base}/rollout/${s.op}`),
    }),
  }, s.label));
  const wave = ro.wave ? `wave ${ro.wave.name} (${(ro.wave.index ?? 0) + 1} of ${(ro.waves || []).length})` : '';
  const done = ['Complete', 'RolledBack', 'Failed'].includes(ro.state);
  const last = (ro.waves || []).map((w) => w.completedAt).filter(Boolean).sort().pop();
  const rb = ro.rollback;
  return h('div', { class: 'panel rollout', id: 'rollout', 'data-state': ro.state, 'data-wave': ro.wave ? ro.wave.name : '' },
    h('h2', {}, 'Rollout of revision ', String(ro.revision ?? ''), ' ', badge(stateKind(ro.state), ro.state), ' ',
      h('span', { class: 'muted' }, wave)),
    h('p', { class: 'muted' }, ro.startedAt ? `Started ${when(ro.startedAt)}` : '',
      done && last ? `, last wave completed ${when(last)}` : '',
      ro.startedAt ? ` (${done && last ? 'took' : 'running for'} ${elapsed(ro.startedAt, done ? last : null)})` : ''),
    ro.reason ? h('p', { class: 'reason', id: 'rollout-reason' }, ro.reason) : null,
    buttons.length ? h('div', { class: 'actions', id: 'rollout-actions' }, buttons) : null,
    waveTable(ro.waves || [], ro.wave && !done ? ro.wave.name : null),
    rb ? h('div', { class: 'rollback', id: 'rollback' },
      h('h2', {}, `Rollback to revision ${rb.revision} `, badge(stateKind(rb.state), rb.state)),
      waveTable(rb.waves || [], null)) : null);
}
