// The DIG page in Chromium while eco rolls the two-tier example out in
// waves with approval between them: the rollout panel pauses, resumes and
// approves until it completes; a refused action shows the API's message;
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
  await post(ECO + DIG + '/instantiate');

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

  // A refusal: someone else resumes while the dialog is open; Confirm then
  // gets a 409 and the dialog shows the API's own message.
  await page.locator('#rollout-actions button[data-op="resume"]').click();
  await page.locator('#confirm').waitFor({ timeout: WAIT });
  await post(ECO + DIG + '/rollout/resume');
  // The resume is taken up once rsync sees it: until then another is accepted too.
  await page.waitForFunction(async (dig) => {
    const s = await (await fetch(dig + '/status?status=deployed&output=summary')).json();
    return s.rollout && s.rollout.state !== 'Paused';
  }, ECO + DIG, { timeout: WAIT, polling: 100 });
  check((await page.locator('#confirm-title').textContent()).startsWith('Resume'), 'the dialog is the resume\'s');
  await page.locator('#confirm-yes').click();
  await page.waitForFunction(() => !document.getElementById('confirm') || document.querySelector('#confirm-message.refused'),
    null, { timeout: WAIT });
  const status = await (await fetch(ECO + DIG + '/status?status=deployed&output=summary')).json();
  check(await page.locator('#confirm-message.refused').count() === 1,
    'the page\'s resume after another one was refused; it was accepted, the rollout now: ' + JSON.stringify(status.rollout));
  const refused = await page.locator('#confirm-message').textContent();
  const again = await fetch(ECO + DIG + '/rollout/resume', { method: 'POST' });
  const apiMessage = (await again.json()).message;
  check(again.status === 409, 'a second resume is refused, got ' + again.status);
  check(refused === `HTTP 409 from ${DIG}/rollout/resume: ${apiMessage}`, `the dialog shows the API's message "${apiMessage}", got ${refused}`);
  await shot('refused');
  await page.locator('#confirm-no').click();

  // Approve each remaining wave from the panel until the rollout completes:
  // first-edges after core, then rest after first-edges (the rollout's wave
  // is the one that ran last while it waits).
  await shot('resumed');
  for (const wave of ['core', 'first-edges']) {
    await page.locator(`#rollout[data-state="WaitingApproval"][data-wave="${wave}"]`).waitFor({ timeout: WAIT });
    await steer(page, 'approve');
  }
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
