// Operating the fleet from the console (operate_test.cc, Operate.Lifecycle…):
// the logical cloud instantiated from the overview; the DIG approved,
// instantiated with its fleet plan shown (clusters, reasons, objects),
// a cluster down shown on the overview as a problem linked to its DIG,
// updated after its profile changed (the image diff), refused with the API's message when the plan
// went stale and a migrate to a DIG not approved refused with the API's
// message, rolled back to revision 1 from its history, terminated; an
// agent cluster registered and its manifest command shown with a token that
// is in no URL. Every step is confirmed in a <dialog>; Esc closes one.
import fs from 'node:fs';
import {
  ECO, SIM, WAIT, check, call, post, runInBrowser,
} from './browser.mjs';

const DIG = '/v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/twotier-dig';
const PROFILE = '/v2/projects/demo/composite-apps/twotier/v1/composite-profiles/twotier-profile/profiles/web-profile';
const op = (page, name) => page.locator(`#dig-actions button[data-op="${name}"]`);

// Replaces the web app's profile by one whose image is nginx:VERSION
// (operate_test.cc made the archives in EXAMPLE_DIR).
async function setImage(version) {
  const form = new FormData();
  form.append('metadata', JSON.stringify({ metadata: { name: 'web-profile' }, spec: { app: 'web' } }));
  form.append('file', new Blob([fs.readFileSync(`${process.env.EXAMPLE_DIR}/web-profile-${version}.tgz`)]), 'web-profile.tgz');
  const r = await fetch(ECO + PROFILE, { method: 'PUT', body: form });
  check(r.ok, `PUT ${PROFILE} answered ${r.status}: ${await r.text()}`);
}

// Every placed cell Ready, and the header at `revision`.
async function readyAt(page, revision) {
  await page.waitForFunction((rev) => {
    const cells = [...document.querySelectorAll('#grid .cell:not(.s-none)')];
    const r = document.getElementById('dig-revision');
    return cells.length === 5 && cells.every((c) => c.dataset.state === 'ready') && r && r.textContent === rev;
  }, String(revision), { timeout: WAIT });
}

async function confirm(page, id) {
  await page.locator(`#${id} #op-confirm:enabled`).click();
  await page.locator(`#${id}`).waitFor({ state: 'detached', timeout: WAIT });
}

await runInBrowser('operate', async (page, shot) => {
  await page.goto(ECO + '/ui/');
  // The logical cloud from its row on the overview.
  const lc = page.locator('tr[data-lc="demo/fleet"]');
  await lc.locator('button[data-op="lc-instantiate"]').click();
  await page.locator('#op-instantiate').waitFor({ timeout: WAIT });
  check((await page.locator('#op-instantiate').textContent()).includes('DIGs can then be instantiated into it'),
    'the logical cloud dialog says what instantiate does');
  await shot('lc-instantiate-dialog');
  await confirm(page, 'op-instantiate');
  await page.waitForFunction(() => {
    const td = document.querySelector('tr[data-lc="demo/fleet"] td.state');
    return td && td.textContent === 'Instantiated';
  }, null, { timeout: WAIT });

  // The DIG: approve, then instantiate with the plan.
  await page.locator('tr[data-dig="demo/twotier/v1/twotier-dig"] a').click();
  await op(page, 'approve').click();
  await confirm(page, 'op-approve');
  await op(page, 'instantiate').click();
  const dlg = page.locator('#op-instantiate');
  await dlg.locator('#plan').waitFor({ timeout: WAIT });
  for (const edge of ['edge1', 'edge2', 'edge3', 'edge4']) {
    check(await dlg.locator(`#plan-where tr[data-app="web"] li.placed[data-cluster="edges+${edge}"]`).count() === 1,
      `the plan places web on ${edge}`);
  }
  const reason = await dlg.locator('#plan-where tr[data-app="db"] li.placed[data-cluster="central+core1"]').textContent();
  check(reason.includes('allOf'), 'db on core1 with its reason, got ' + reason);
  check(await dlg.locator('#plan-waves li[data-wave="all"]').count() === 1, 'one wave, all at once');
  check(await dlg.locator('#plan-changes details[data-cluster="edges+edge1"] li.create[data-object^="Deployment/"]').count() === 1,
    'the web Deployment is created on edge1');
  check((await dlg.locator('.plan-summary').textContent()).startsWith('Instantiate revision 1:'), 'the summary names revision 1');
  await shot('instantiate-plan');
  await confirm(page, 'op-instantiate');
  await readyAt(page, 1);
  await shot('instantiated');

  // The overview: the DIG's bar all Ready; edge1 taken down shows as a
  // problem whose link opens the DIG page filtered to it.
  await page.locator('nav a[data-nav="digs"]').click();
  const row = page.locator('tr[data-dig="demo/twotier/v1/twotier-dig"]');
  await row.locator('.bar .seg[data-state="Ready"]').waitFor({ timeout: WAIT });
  check((await row.locator('td').nth(4).textContent()) === 'Instantiated', 'the overview row reads Instantiated');
  check(await row.locator('.bar .seg:not([data-state="Ready"])').count() === 0, 'every resource is Ready');
  await post(SIM + '/sim/clusters/edge1/down');
  const problem = page.locator('#problems li.problem[data-kind="unreachable"] a');
  await problem.waitFor({ timeout: WAIT });
  const href = await problem.getAttribute('href');
  check(href === '#/dig/demo/twotier/v1/twotier-dig?state=unreachable&cluster=edges%2Bedge1', 'the problem links to the DIG filtered, got ' + href);
  check(await page.locator('#providers a[data-provider="edges"]').count() === 1, 'clusters are counted per provider');
  await shot('overview-problem');
  await problem.click();
  await page.locator('#grid .cell[data-cluster="edges+edge1"][data-state="unreachable"]').waitFor({ timeout: WAIT });
  check(await page.locator('#grid .cell[data-cluster="edges+edge2"]').count() === 0, 'the DIG page shows only the cluster concerned');
  await post(SIM + '/sim/clusters/edge1/up');
  await page.goto(ECO + '/ui/#/dig/demo/twotier/v1/twotier-dig');
  await readyAt(page, 1);

  // An update after the web profile changed its image, as a diff.
  await setImage('1.26');
  await op(page, 'update').click();
  const up = page.locator('#op-update');
  await up.locator('#plan').waitFor({ timeout: WAIT });
  const diff = await up.locator('#plan-changes details[data-cluster="edges+edge2"] li.change[data-object^="Deployment/"] pre.diff').textContent();
  check(/image: nginx:1\.25 → nginx:1\.26/.test(diff), 'the change diff shows the image 1.25 → 1.26, got ' + diff);
  check(await up.locator('#plan-changes details[data-cluster="central+core1"]').count() === 0, 'db on core1 does not change');
  check((await up.locator('.plan-summary').textContent()).startsWith('Update to revision 2 (from 1)'), 'the update summary');
  await shot('update-plan');
  await confirm(page, 'op-update');
  await readyAt(page, 2);

  // The plan goes stale while its dialog is open: eco answers 409 and the
  // dialog shows its message; Esc closes the dialog.
  await setImage('1.27');
  await op(page, 'update').click();
  await page.locator('#op-update #plan').waitFor({ timeout: WAIT });
  await setImage('1.28');
  await page.locator('#op-update #op-confirm:enabled').click();
  const err = page.locator('#op-update .op-error');
  await err.waitFor({ state: 'visible', timeout: WAIT });
  const text = await err.textContent();
  check(text.startsWith(`HTTP 409 from ${DIG}/update?plan=`) && text.includes('the plan changed since plan'),
    'the refusal carries the API\'s message, got ' + text);
  await shot('update-refused');
  await page.keyboard.press('Escape');
  await page.locator('#op-update').waitFor({ state: 'detached', timeout: WAIT });
  check(await page.locator('#dig-revision').textContent() === '2', 'nothing changed: still revision 2');

  // Migrate offers the composite app's other DIGs; one not Approved is
  // refused, and the dialog says why in eco's words.
  await post(ECO + DIG.replace(/\/twotier-dig$/, ''), {
    metadata: { name: 'twotier-next' }, spec: { compositeProfile: 'twotier-profile', version: 'r2', logicalCloud: 'fleet' },
  });
  await op(page, 'migrate').click();
  await page.locator('#migrate-target').selectOption({ label: 'v1 / twotier-next' });
  await page.locator('#op-migrate #op-confirm:enabled').click();
  await page.locator('#op-migrate .op-error').waitFor({ state: 'visible', timeout: WAIT });
  const refusedMigrate = await page.locator('#op-migrate .op-error').textContent();
  check(refusedMigrate.startsWith(`HTTP 409 from ${DIG}/migrate: target DeploymentIntentGroup twotier-next is Created`),
    'the migrate refusal carries the API\'s message, got ' + refusedMigrate);
  await shot('migrate-refused');
  await page.locator('#op-migrate #op-cancel').click();
  await page.locator('#op-migrate').waitFor({ state: 'detached', timeout: WAIT });

  // Roll back to revision 1, chosen from the history.
  await op(page, 'rollback').click();
  const rb = page.locator('#op-rollback');
  await rb.locator('#rollback-revision').selectOption('1');
  // Its fleet plan: revision 1's image back on every edge.
  const back = rb.locator('#rollback-where #plan-changes details[data-cluster="edges+edge3"] li.change[data-object^="Deployment/"] pre.diff');
  await back.waitFor({ timeout: WAIT });
  const undo = await back.textContent();
  check(/image: nginx:1\.26 → nginx:1\.25/.test(undo), 'the rollback plan shows the image 1.26 → 1.25, got ' + undo);
  check((await rb.locator('.plan-summary').textContent()).startsWith('Rollback revision 3 (from 2):'), 'the summary names the new revision 3');
  await shot('rollback-dialog');
  await confirm(page, 'op-rollback');
  await readyAt(page, 3);
  const actions = (await call('GET', ECO + DIG + '/status?status=ready&output=summary')).states.actions;
  const rev1 = actions.find((a) => a.state === 'Instantiated' && a.revision === 1).instance;
  check(actions[actions.length - 1].instance === rev1, 'revision 3 is revision 1\'s AppContext deployed again');

  // Terminate, with the keyboard alone: Enter on the button, the dialog
  // takes the focus on its Confirm, Enter again.
  await op(page, 'terminate').focus();
  await page.keyboard.press('Enter');
  await page.locator('#op-terminate #op-confirm:focus').waitFor({ timeout: WAIT });
  check((await page.locator('#op-terminate').textContent()).includes('on 5 clusters'), 'terminate says on how many clusters');
  await shot('terminate-dialog');
  await page.keyboard.press('Enter');
  await page.locator('#op-terminate').waitFor({ state: 'detached', timeout: WAIT });
  await page.waitForFunction(() => (document.getElementById('dig-state') || {}).textContent === 'Terminated', null, { timeout: WAIT });

  // Register an agent cluster: the manifest command with a fresh token.
  await page.locator('nav a[data-nav="clusters"]').click();
  await page.locator('#register-agent').waitFor({ timeout: WAIT });
  await page.locator('#reg-provider').fill('edges');
  await page.locator('#reg-name').fill('agent1');
  await page.locator('#reg-labels').fill('remote, far');
  await page.locator('#register-agent button[type="submit"]').click();
  const cmd = (await page.locator('#agent-command').textContent()).trim();
  const m = cmd.match(/^eco agent manifest --hub (\S+) --token ([0-9a-f]{64}) \| kubectl apply -f -$/);
  check(m, 'the manifest command with a token, got ' + cmd);
  check(!page.url().includes(m[2]), 'the token is not in the URL');
  await shot('agent-registered');
  await page.locator('#agent-token-close').click();
  const agentRow = page.locator('tr[data-cluster="edges+agent1"][data-delivery="agent"]');
  await agentRow.waitFor({ timeout: WAIT });
  check((await agentRow.locator('td').nth(4).textContent()) === 'Agent not connected yet', 'its agent has not dialled in yet');
  const labels = (await agentRow.locator('.chip').allTextContents()).sort().join(',');
  check(labels === 'far,remote', 'its labels are shown, got ' + labels);
  await agentRow.locator('button[data-op="new-token"]').click();
  await confirm(page, 'agent-new-token');
  const again = (await page.locator('#agent-command').textContent()).trim();
  check(again.includes('--token ') && !again.includes(m[2]), 'a new token for the existing agent cluster');
  await page.keyboard.press('Escape');
  await page.locator('#agent-token').waitFor({ state: 'detached', timeout: WAIT });
  await page.locator('#f-delivery').selectOption('agent');
  await page.waitForFunction(() => document.querySelectorAll('#clusters tbody tr[data-cluster]').length === 1, null, { timeout: WAIT });
  check(page.url().endsWith('#/clusters?delivery=agent'), 'the filter is in the URL, got ' + page.url());
  await shot('clusters-agent-filter');
});
