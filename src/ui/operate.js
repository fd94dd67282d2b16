// Lifecycle operations from the console: each with a confirmation dialog
// that says what will happen (the fleet plan for instantiate, update and
// rollback) and, when eco refuses, the API's own message. The API decides what is allowed; the console offers what
// the state allows.
import {
  h, api, send, enc, digPath, errorText, openDialog, mayAdminister,
} from './lib.js';
import { planView } from './operate-plan.js';

function lastOf(doc) {
  const actions = (((doc || {}).states || {}).actions) || [];
  return actions[actions.length - 1] || {};
}

// A dialog with a body, an error line, and Confirm/Cancel. `run` does the
// operation; a refusal shows its message and leaves the dialog open.
function confirmDialog({ id, title, confirmText, describe, run, done }) {
  const { dialog, body, close } = openDialog(title, { id });
  const error = h('div', { class: 'op-error', role: 'alert', hidden: true });
  const status = h('p', { class: 'op-status muted', 'aria-live': 'polite' });
  const confirm = h('button', { type: 'button', class: 'primary', id: 'op-confirm', disabled: true }, confirmText);
  const cancel = h('button', { type: 'button', id: 'op-cancel', onclick: close }, 'Cancel');
  const content = h('div', { class: 'op-content' }, h('p', { class: 'muted' }, 'Loading…'));
  body.append(content, error, status, h('div', { class: 'op-buttons' }, confirm, cancel));
  const fail = (e) => {
    error.hidden = false;
    error.textContent = errorText(e);
    error.scrollIntoView({ block: 'nearest' });
  };
  let ready = null;
  (async () => {
    try {
      ready = await describe(content);
      confirm.disabled = false;
      confirm.focus();
    } catch (e) {
      content.replaceChildren();
      fail(e);
      cancel.focus();
    }
  })();
  confirm.addEventListener('click', async () => {
    confirm.disabled = true;
    error.hidden = true;
    status.textContent = 'Sending…';
    try {
      await run(ready);
      status.textContent = 'Accepted.';
      dialog.dataset.done = 'true';
      if (done) done();
      close();
    } catch (e) {
      status.textContent = '';
      fail(e);
      confirm.disabled = false;
    }
  });
  return dialog;
}

const para = (...t) => h('p', {}, ...t);

// Instantiate or update: the fleet plan, then the operation with its id.
function planned(ref, op, done) {
  const base = ref.path || digPath(ref.project, ref.compositeApp, ref.compositeAppVersion, ref.dig);
  const title = op === 'instantiate' ? `Instantiate ${ref.dig}` : `Update ${ref.dig}`;
  return confirmDialog({
    id: 'op-' + op,
    title,
    confirmText: op === 'instantiate' ? 'Instantiate' : 'Update',
    describe: async (box) => {
      const plan = await send('POST', base + '/plan');
      box.replaceChildren(planView(plan));
      return plan;
    },
    run: (plan) => send('POST', `${base}/${op}?plan=${enc(plan.planId)}`),
    done,
  });
}

// Rollback: the revision chosen from the history, and its fleet plan
// (POST DIG/plan?rollback=N): that revision's own AppContext against the
// one deployed now, per cluster; sent with the plan's id.
function rollback(ref, doc, done) {
  const base = ref.path || digPath(ref.project, ref.compositeApp, ref.compositeAppVersion, ref.dig);
  const actions = (((doc || {}).states || {}).actions) || [];
  const current = [...actions].reverse().find((a) => a.state === 'Instantiated') || {};
  const seen = new Set();
  const revisions = [];
  for (const a of [...actions].reverse()) {
    if (a.state !== 'Instantiated' || a.revision === undefined || seen.has(a.instance) || a.instance === current.instance) continue;
    seen.add(a.instance);
    revisions.push(a);
  }
  const select = h('select', { id: 'rollback-revision', 'aria-label': 'revision' },
    revisions.map((a) => h('option', { value: String(a.revision), 'data-instance': a.instance }, `revision ${a.revision} (${a.time || a.instance})`)));
  const where = h('div', { id: 'rollback-where' });
  let plan = null;
  const load = async () => {
    const opt = select.selectedOptions[0];
    if (!opt) return;
    plan = null;
    where.replaceChildren(h('p', { class: 'muted' }, 'Planning…'));
    plan = await send('POST', `${base}/plan?rollback=${enc(opt.value)}`);
    where.replaceChildren(planView(plan));
  };
  return confirmDialog({
    id: 'op-rollback',
    title: `Roll back ${ref.dig}`,
    confirmText: 'Roll back',
    describe: async (box) => {
      if (!revisions.length) throw new Error('There is no earlier revision to roll back to.');
      select.addEventListener('change', () => load().catch((e) => where.replaceChildren(h('p', { class: 'op-error' }, errorText(e)))));
      box.replaceChildren(
        h('label', {}, 'Roll back to ', select),
        para(`The revision's own resources, as they were deployed then, are applied again on its clusters, ` +
          `as an update from revision ${current.revision ?? '—'}; what only the current revision has is deleted. ` +
          'It becomes a new revision.'),
        where);
      await load();
      return null;
    },
    run: () => send('POST', `${base}/rollback${plan ? '?plan=' + enc(plan.planId) : ''}`, { spec: { revision: select.value } }),
    done,
  });
}

// Migrate: the target version and DIG from the catalog's lists.
function migrate(ref, done) {
  const base = ref.path || digPath(ref.project, ref.compositeApp, ref.compositeAppVersion, ref.dig);
  const select = h('select', { id: 'migrate-target', 'aria-label': 'target' });
  return confirmDialog({
    id: 'op-migrate',
    title: `Migrate ${ref.dig}`,
    confirmText: 'Migrate',
    describe: async (box) => {
      const p = enc(ref.project);
      const versions = (await api(`/v2/projects/${p}/composite-apps`))
        .filter((c) => c.metadata.name === ref.compositeApp).map((c) => (c.spec || {}).compositeAppVersion);
      for (const v of versions) {
        const digs = await api(`/v2/projects/${p}/composite-apps/${enc(ref.compositeApp)}/${enc(v)}/deployment-intent-groups`);
        for (const d of digs) {
          if (v === ref.compositeAppVersion && d.metadata.name === ref.dig) continue;
          select.append(h('option', { value: JSON.stringify([v, d.metadata.name]) }, `${v} / ${d.metadata.name}`));
        }
      }
      if (!select.options.length) throw new Error(`No other deployment intent group of ${ref.compositeApp} to migrate to.`);
      box.replaceChildren(h('label', {}, 'Target version / DIG ', select),
        para('eco builds the target\'s first revision and deploys it as an update from this one: the new version\'s ' +
          'objects are applied, then those only this DIG had are deleted. This DIG becomes Updated, the target Instantiated. ' +
          'The target must be Approved and in the same logical cloud.'));
      return null;
    },
    run: () => {
      const [v, d] = JSON.parse(select.value);
      return send('POST', base + '/migrate', { spec: { targetCompositeAppVersion: v, targetDeploymentIntentGroup: d } });
    },
    done,
  });
}

function simple(ref, op, text, done) {
  const base = ref.path || digPath(ref.project, ref.compositeApp, ref.compositeAppVersion, ref.dig);
  return confirmDialog({
    id: 'op-' + op,
    title: `${op[0].toUpperCase()}${op.slice(1)} ${ref.dig}`,
    confirmText: op[0].toUpperCase() + op.slice(1),
    describe: async (box) => { box.replaceChildren(para(text)); return null; },
    run: () => send('POST', `${base}/${op}`),
    done,
  });
}

// A toolbar of the operations a DIG offers in its state, for the DIG page's
// header. ref = {project, compositeApp, compositeAppVersion, dig, path?};
// statusDoc is any status answer of the DIG (states, deployedStatus, clusterCounts).
// The DIG page rebuilds its header on every status document: the same
// toolbar is handed back while the state is the same, and a button that
// had the keyboard focus gets it back once the header is in place again.
const toolbars = new Map();
export function digActions(ref, statusDoc, done) {
  const sig = JSON.stringify([ref, lastOf(statusDoc), (statusDoc || {}).deployedStatus, ((statusDoc || {}).clusterCounts || {}).total]);
  const key = ref.path || digPath(ref.project, ref.compositeApp, ref.compositeAppVersion, ref.dig);
  const cached = toolbars.get(key);
  if (cached && cached.sig === sig) {
    const focused = cached.bar.contains(document.activeElement) ? document.activeElement : null;
    if (focused) queueMicrotask(() => { if (focused.isConnected) focused.focus(); });
    return cached.bar;
  }
  const bar = buildActions(ref, statusDoc, done);
  toolbars.clear();
  toolbars.set(key, { sig, bar });
  return bar;
}

function buildActions(ref, statusDoc, done) {
  const state = lastOf(statusDoc).state || 'Created';
  const deployed = (statusDoc || {}).deployedStatus || '';
  const cc = (statusDoc || {}).clusterCounts || {};
  const on = cc.total ? ` on ${cc.total} cluster${cc.total === 1 ? '' : 's'}` : '';
  const revisions = new Set(((((statusDoc || {}).states || {}).actions) || []).filter((a) => a.state === 'Instantiated').map((a) => a.instance));
  const bar = h('div', { class: 'actions', id: 'dig-actions', role: 'toolbar', 'aria-label': 'operations', 'data-state': state });
  const add = (op, label, open) => bar.append(h('button', { type: 'button', 'data-op': op, onclick: open }, label));
  if (['Created', 'Terminated', 'Updated'].includes(state)) {
    add('approve', 'Approve', () => simple(ref, 'approve', 'Approving lets the DIG be instantiated; nothing is deployed yet.', done));
  }
  if (['Approved', 'Terminated', 'TerminateStopped'].includes(state)) add('instantiate', 'Instantiate…', () => planned(ref, 'instantiate', done));
  if (['Instantiated', 'InstantiateStopped'].includes(state)) {
    add('update', 'Update…', () => planned(ref, 'update', done));
    if (revisions.size > 1) add('rollback', 'Roll back…', () => rollback(ref, statusDoc, done));
    add('terminate', 'Terminate…', () => simple(ref, 'terminate',
      `Every resource of this DIG is deleted from its clusters${on}. The DIG stays; it can be instantiated again.`, done));
    add('migrate', 'Migrate…', () => migrate(ref, done));
  }
  if (['Instantiated', 'Terminated'].includes(state) && /^(Created|Instantiating|Terminating|Updating)$/.test(deployed)) {
    add('stop', 'Stop…', () => simple(ref, 'stop',
      `rsync stops what it is doing for this DIG (${deployed.toLowerCase()}): what was applied stays, nothing more is sent.`, done));
  }
  return bar;
}

// Instantiate and terminate of a logical cloud (administrators only: project
// users may not write logical clouds).
export function lcActions(lc, done) {
  if (!mayAdminister()) return h('span');
  const base = `/v2/projects/${enc(lc.project)}/logical-clouds/${enc(lc.name)}`;
  const ref = { dig: `logical cloud ${lc.name}`, path: base };
  const bar = h('div', { class: 'actions', role: 'toolbar', 'aria-label': 'logical cloud operations' });
  if (lc.state === 'Instantiated') {
    bar.append(h('button', { type: 'button', 'data-op': 'lc-terminate', onclick: () => simple(ref, 'terminate',
      `The logical cloud's namespace, roles and quotas are deleted from its clusters. ` +
      'eco refuses while a DIG deployed to it is still instantiated.', done) }, 'Terminate…'));
  } else {
    bar.append(h('button', { type: 'button', 'data-op': 'lc-instantiate', onclick: () => simple(ref, 'instantiate',
      String(lc.level) === '0'
        ? 'A level-0 (administrator) cloud deploys nothing on its clusters: it uses their own namespace. DIGs can then be instantiated into it.'
        : 'Its namespace, user, roles and quotas are created on its clusters. DIGs can then be instantiated into it.', done) }, 'Instantiate…'));
  }
  return bar;
}
