// Drives the dashboard in Debian's headless Chromium (playwright-core) while
// eco deploys the two-tier example on kube-sim: the grid turns Ready live,
// drill-down shows resources, their objects and when the cluster was last
// seen, a cluster taken down turns red (grid and cluster list) and back, and
// an API error is shown as the API states it. Started by dashboard_test.cc, which prepared eco and the
// fleet; exits non-zero with a message on the first failed check.
import {
  ECO, SIM, WAIT, check, post, runInBrowser,
} from './browser.mjs';

const DIG = '/v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/twotier-dig';

await runInBrowser('dashboard', async (page, shot) => {
  // "/" leads to the dashboard; the DIG is listed, not yet instantiated.
  await page.goto(ECO + '/');
  check(page.url() === ECO + '/ui/', 'the root redirects to /ui/, got ' + page.url());
  const row = page.locator('tr[data-dig="demo/twotier/v1/twotier-dig"]');
  await row.waitFor({ timeout: WAIT });
  check((await row.locator('td').nth(4).textContent()) === 'Created', 'a new DIG shows state Created');
  await shot('deployments');

  await row.click();
  await page.getByText('Not instantiated yet.').waitFor({ timeout: WAIT });
  await page.evaluate(() => { window.ecoTestMarker = 'same page'; });
  await shot('dig-before-instantiate');

  // Instantiated while the page is open: the grid fills and turns ready
  // from the status stream alone.
  await post(ECO + '/v2/projects/demo/logical-clouds/fleet/instantiate');
  await post(ECO + DIG + '/approve');
  await post(ECO + DIG + '/instantiate');
  const placed = page.locator('#grid .cell:not(.s-none)');
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('#grid .cell:not(.s-none)')];
    return cells.length === 5 && cells.every((c) => c.dataset.state === 'ready');
  }, null, { timeout: WAIT });
  check(await page.evaluate(() => window.ecoTestMarker) === 'same page', 'the page was not reloaded');
  check(await placed.count() === 5, 'web on four edges and db on core1');
  check(await page.locator('#grid .cell[data-app="db"][data-cluster="central+core1"]').count() === 1,
    'db is placed on core1 by name');
  for (const edge of ['edge1', 'edge2', 'edge3', 'edge4']) {
    check(await page.locator(`#grid .cell[data-app="web"][data-cluster="edges+${edge}"][data-state="ready"]`).count() === 1,
      `web is ready on ${edge}`);
  }
  const ready = await page.locator('#dig-ready').textContent();
  check(ready === 'Ready on 5 of 5 clusters', 'the DIG reads Ready on 5 of 5 clusters, got ' + ready);
  check((await page.locator('#dig-state').textContent()) === 'Instantiated', 'the DIG reads Instantiated');
  const history = await page.locator('#history tbody tr td:first-child').allTextContents();
  check(history[0] === 'Instantiated' && history[1] === 'Approved', 'history lists Instantiated after Approved, got ' + history);
  await shot('dig-ready');

  // Drill-down: the resources of web on edge1, then one object as deployed.
  await page.locator('#grid .cell[data-app="web"][data-cluster="edges+edge1"]').click();
  await page.locator('#drilldown').waitFor({ timeout: WAIT });
  const deployment = page.locator('#drilldown tr[data-resource^="Deployment/"]');
  check(await deployment.count() === 1, 'the web Deployment is listed');
  check((await deployment.locator('td').nth(2).textContent()) === 'Ready', 'its ready status is Ready');
  check((await deployment.locator('td').nth(3).textContent()) === 'Applied', 'its deployed status is Applied');
  check(await page.locator('#drilldown tr[data-resource^="Pod/"]').count() >= 1, 'its Pods are listed');
  // The chart's undeclared field, left out by the apply (fieldValidation
  // Warn): marked in the grid, named in the drill-down.
  check(await page.locator('#grid .cell[data-app="web"][data-cluster="edges+edge1"] .warn-mark').count() === 1,
    'the web cell is marked with a warning');
  check(await page.locator('#grid .cell[data-app="db"] .warn-mark').count() === 0, 'db has no warning');
  const warning = await deployment.locator('td').nth(4).textContent();
  check(warning === 'spec.revisionHistoryLimt: field not declared in schema, not applied',
    'the Deployment row names the field left out, got ' + warning);
  // The ready monitor records its contacts with the cluster: lastSeen.
  await page.locator('#drilldown').getByText(/Last seen /).waitFor({ timeout: WAIT });
  await shot('drill-down');
  await deployment.click();
  await page.waitForFunction(() => {
    const d = document.getElementById('detail');
    return d && d.textContent.includes('"kind": "Deployment"');
  }, null, { timeout: WAIT });
  check((await page.locator('#detail').textContent()).includes('app.eco.io/context'), 'the object carries eco\'s labels');
  await shot('resource-detail');

  // edge1 goes down: its cell turns red, the others stay green.
  await post(SIM + '/sim/clusters/edge1/down');
  await page.locator('#grid .cell[data-cluster="edges+edge1"][data-state="unreachable"]').waitFor({ timeout: WAIT });
  const red = await page.locator('#grid .cell[data-app="web"][data-cluster="edges+edge1"]').evaluate((el) => getComputedStyle(el).color);
  check(red === 'rgb(198, 40, 40)', 'an unreachable cell is drawn red, got ' + red);
  check(await page.locator('#grid .cell[data-state="ready"]').count() === 4, 'the other four cells stay ready');
  const down = await page.locator('#dig-ready').textContent();
  check(down === 'Ready on 4 of 5 clusters, 1 unreachable', 'the summary counts the unreachable cluster, got ' + down);
  await page.getByText(/has been unreachable since/).waitFor({ timeout: WAIT });
  await shot('cluster-down');

  await page.locator('nav a[data-nav="clusters"]').click();
  await page.locator('tr[data-cluster="edges+edge1"][data-connectivity="Unreachable"]').waitFor({ timeout: WAIT });
  await page.locator('tr[data-cluster="edges+edge2"][data-connectivity="Reachable"]').waitFor({ timeout: WAIT });
  await page.waitForFunction(() => {
    const cell = document.querySelector('tr[data-cluster="edges+edge2"] td.last-seen');
    return cell && cell.textContent !== '—' && cell.textContent !== '';
  }, null, { timeout: WAIT });
  const labels = await page.locator('tr[data-cluster="edges+edge3"] .chip').allTextContents();
  check(labels.includes('edge'), 'cluster labels are shown, got ' + labels.join(','));
  await shot('clusters-one-down');

  // Back up: reachable again, and the grid green again.
  await post(SIM + '/sim/clusters/edge1/up');
  await page.locator('tr[data-cluster="edges+edge1"][data-connectivity="Reachable"]').waitFor({ timeout: WAIT });
  await page.goBack();
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('#grid .cell:not(.s-none)')];
    return cells.length === 5 && cells.every((c) => c.dataset.state === 'ready');
  }, null, { timeout: WAIT });
  await shot('cluster-back');

  // An API error is shown with its status and the API's own message.
  await page.goto(ECO + '/ui/#/dig/demo/twotier/v1/no-such-dig');
  await page.locator('#error').waitFor({ state: 'visible', timeout: WAIT });
  const err = await page.locator('#error').textContent();
  check(err.startsWith('HTTP 404 from /v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/no-such-dig'),
    'the error names status and path, got ' + err);
  const apiMessage = (await (await fetch(ECO + DIG.replace('twotier-dig', 'no-such-dig'))).json()).message;
  check(err.endsWith(': ' + apiMessage), `the error carries the API's message "${apiMessage}", got ${err}`);
  await shot('api-error');
});
