// The DIG page in Chromium while eco rolls the two-tier example out in
// waves with approval between them: instantiated from the console after
// its plan showed the waves; the rollout panel pauses, resumes and
// approves; an approval made stale by another one is refused with the
// API's message; the waves grouped;
// a Deployment changed by hand shows its field difference under
// driftPolicy report and Repair makes it Applied again. Started by
// dig_test.cc (DigPage.RolloutDriftAndRefusals), which prepared eco, the
// fleet and the example with spec.rollout; KUBECONFIGS is kube-sim's
// kubeconfig directory.
import { execFileSync } from 'node:child_process';
import {
  ECO, WAIT, check, post, runInBrowser,
} from './browser.mjs';

const DIG = '/v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/twotier-dig';
const rolloutState = (page, s) => page.locator(`#rollout[data-state="${s}"]`).waitFor({ timeout: WAIT });

// Clicks a rollout button and confirms in the dialog.
async function steer(page, op) {
  await page.locator(`#rollout-actions button[data-op="${op}"]`).click();
  await page.locator('#confirm').waitFor({ timeout: WAIT });
  await page.locator('#confirm-yes').click();
  await page.locator('#confirm').waitFor({ state: 'detached', timeout: WAIT });
}

await runInBrowser('dig', async (page, shot) => {
  await post(ECO + '/v2/projects/demo/logical-clouds/fleet/instantiate');
  await post(ECO + DIG + '/approve');
  await page.goto(ECO + '/ui/#/dig/demo/twotier/v1/twotier-dig');
  await page.getByText('Not instantiated yet.').waitFor({ timeout: WAIT });
  // Instantiated from the console: its plan lists the rollout's waves in order.
  await page.locator('#dig-actions button[data-op="instantiate"]').click();
  const plan = page.locator('#op-instantiate');
  await plan.locator('#plan').waitFor({ timeout: WAIT });
  const planned = await plan.locator('#plan-waves li[data-wave]').evaluateAll((els) => els.map((e) => e.dataset.wave));
  check(planned.join(',') === 'core,first-edges,rest', 'the plan shows the waves in order, got ' + planned);
  await shot('instantiate-plan');
  await plan.locator('#op-confirm:enabled').click();
  await plan.waitFor({ state: 'detached', timeout: WAIT });

  // Wave "core" (core1) goes first, then the page waits for an approval.
  await rolloutState(page, 'WaitingApproval');
  check(await page.locator('#rollout tr[data-wave="core"]').count() === 1, 'the core wave is listed');
  const coreDone = await page.locator('#rollout tr[data-wave="core"] td').nth(3).textContent();
  check(coreDone === '1', 'the core wave has its one cluster done, got ' + coreDone);
  check(await page.locator('#rollout-actions button[data-op="resume"]').count() === 0, 'no Resume while not paused');
  check(await page.locator('#rollout-actions button[data-op="approve"]').count() === 1, 'Approve is offered');
  check((await page.locator('#dig-rollout').textContent()).startsWith('WaitingApproval'), 'the header shows the rollout state');
  await shot('waiting-approval');

  // Pause from the panel: Paused, and only Resume/Abort offered.
  await steer(page, 'pause');
  await rolloutState(page, 'Paused');
  check(await page.locator('#rollout-actions button[data-op="approve"]').count() === 0, 'no Approve while paused');
  check(await page.locator('#rollout-actions button[data-op="resume"]').count() === 1, 'Resume is offered');
  await shot('paused');

  // Resume from the panel: waiting for the approval of first-edges again.
  await steer(page, 'resume');
  await page.locator('#rollout[data-state="WaitingApproval"][data-wave="core"]').waitFor({ timeout: WAIT });
  await shot('resumed');

  // Approve from the panel: first-edges runs, then rest waits.
  await steer(page, 'approve');
  await page.locator('#rollout[data-state="WaitingApproval"][data-wave="first-edges"]').waitFor({ timeout: WAIT });

  // A refusal: someone else approves the last wave while the page's dialog
  // is open; Confirm then gets a 409 (one approval per wave: approved
  // already, or the wave running or over by then) and the dialog shows
  // the API's own message.
  await page.locator('#rollout-actions button[data-op="approve"]').click();
  await page.locator('#confirm').waitFor({ timeout: WAIT });
  check((await page.locator('#confirm-title').textContent()).startsWith('Approve'), 'the dialog is the approval\'s');
  await post(ECO + DIG + '/rollout/approve');
  const answer = page.waitForResponse((r) => r.url().endsWith('/rollout/approve') && r.request().method() === 'POST');
  await page.locator('#confirm-yes').click();
  const r = await answer;
  check(r.status() === 409, 'the stale approval is refused, got ' + r.status());
  const apiMessage = (await r.json()).message;
  await page.locator('#confirm-message.refused').waitFor({ timeout: WAIT });
  const refused = await page.locator('#confirm-message').textContent();
  check(refused === `HTTP 409 from ${DIG}/rollout/approve: ${apiMessage}`, `the dialog shows the API's message "${apiMessage}", got ${refused}`);
  await shot('refused');
  await page.locator('#confirm-no').click();
  await page.locator('#confirm').waitFor({ state: 'detached', timeout: WAIT });
  await rolloutState(page, 'Complete');
  check(await page.locator('#rollout-actions').count() === 0, 'no steering buttons once complete');
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('#grid .cell:not(.s-none)')];
    return cells.length === 5 && cells.every((c) => c.dataset.state === 'ready');
  }, null, { timeout: WAIT });
  // Grouped by wave: the rollout's order, each group with its counts.
  await page.selectOption('#f-group', 'wave');
  await page.waitForFunction(() => document.querySelectorAll('#grid .vgroup').length === 3, null, { timeout: WAIT });
  const waves = await page.locator('#grid .vgroup').allTextContents();
  check(waves.join(' / ') === 'wave core 1 cluster: 1 ready / wave first-edges 2 clusters: 2 ready / wave rest 2 clusters: 2 ready',
    'groups by wave in the rollout\'s order, got ' + waves.join(' / '));
  check(page.url().endsWith('?group=wave'), 'the grouping is in the URL, got ' + page.url());
  await shot('by-wave');
  await page.selectOption('#f-group', '');
  const summary = await page.locator('#dig-ready').textContent();
  check(summary === 'Ready on 5 of 5 clusters', 'the summary reads Ready on 5 of 5 clusters, got ' + summary);
  await shot('rollout-complete');

  // Drift under driftPolicy report: replicas changed by hand on edge1.
  execFileSync('kubectl', ['--kubeconfig', `${process.env.KUBECONFIGS}/edge1.yaml`, 'patch', 'deployment', 'r1-web',
    '-n', 'default', '-p', '{"spec":{"replicas":5}}']);
  const cell = page.locator('#grid .cell[data-app="web"][data-cluster="edges+edge1"]');
  await page.locator('#grid .cell[data-app="web"][data-cluster="edges+edge1"][data-state="drifted"]').waitFor({ timeout: WAIT });
  check((await page.locator('#dig-ready').textContent()).includes('1 drifted'), 'the summary counts the drifted cluster');
  // Problems first: edge1's row is the grid's first.
  check(await page.locator('#grid .vbody .vrow').first().getAttribute('data-key') === 'edges+edge1', 'the drifted cluster is listed first');
  await cell.click();
  const field = page.locator('#drift tr[data-path="spec.replicas"]');
  await field.waitFor({ timeout: WAIT });
  const tds = await field.locator('td').allTextContents();
  check(tds[1] === '2' && tds[2] === '5', 'desired 2, live 5, got ' + tds.join(' | '));
  check(tds[3] !== '' && tds[3] !== '—', 'the manager that changed it is named, got ' + tds[3]);
  await shot('drifted');

  await page.locator('#repair').click();
  await page.locator('#confirm').getByText(/Re-applies eco's manifests/).waitFor({ timeout: WAIT });
  await page.locator('#confirm-yes').click();
  await page.locator('#confirm').waitFor({ state: 'detached', timeout: WAIT });
  await page.waitForFunction(() => {
    const row = document.querySelector('#drilldown tr[data-resource^="Deployment/"]');
    return row && row.children[3].textContent === 'Applied';
  }, null, { timeout: WAIT });
  await page.locator('#grid .cell[data-app="web"][data-cluster="edges+edge1"][data-state="ready"]').waitFor({ timeout: WAIT });
  check(await page.locator('#drift').count() === 0, 'nothing drifted any more');
  const replicas = execFileSync('kubectl', ['--kubeconfig', `${process.env.KUBECONFIGS}/edge1.yaml`, 'get', 'deployment', 'r1-web',
    '-n', 'default', '-o', 'jsonpath={.spec.replicas}']).toString();
  check(replicas === '2', 'the cluster has 2 replicas again, got ' + replicas);
  await shot('repaired');
});
