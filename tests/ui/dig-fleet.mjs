// The DIG page at 1,001 clusters (web on e-1 … e-1000, db on core1): one
// edge taken down is the grid's first row (problems first), the fleet
// overview's problem strip links to the DIG filtered to it, the
// "unreachable" filter finds it alone and the filtered URL shows the same
// view when opened again; natural order (e-2 before e-10), grouping by
// provider with counts, the search box, Enter on a row for the
// drill-down, and a narrow window. Started by dig_test.cc
// (DigPage.ThousandClustersProblemsFirstAndFilters).
import {
  ECO, SIM, WAIT, check, post, runInBrowser,
} from './browser.mjs';

const DIG = '/v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/twotier-dig';
const PAGE = ECO + '/ui/#/dig/demo/twotier/v1/twotier-dig';
const keys = (page) => page.locator('#grid .vbody .vrow[data-key]').evaluateAll((rows) => rows.map((r) => r.dataset.key));
const summary = (page) => page.locator('#dig-ready').textContent();

await runInBrowser('dig-fleet', async (page, shot) => {
  await post(ECO + '/v2/projects/demo/logical-clouds/fleet/instantiate');
  await post(ECO + DIG + '/approve');
  await post(ECO + DIG + '/instantiate');
  await page.goto(PAGE);
  await page.waitForFunction(() => {
    const s = document.getElementById('dig-ready');
    return s && s.textContent === 'Ready on 1001 of 1001 clusters';
  }, null, { timeout: 90000 });
  // Only the rows in view are in the DOM.
  const inDom = await page.locator('#grid .vbody .vrow').count();
  check(inDom > 5 && inDom < 80, 'a windowed grid, got ' + inDom + ' rows in the DOM');
  const first = await keys(page);
  check(first[0] === 'central+core1' && first[1] === 'edges+e-1' && first[2] === 'edges+e-2' && first[10] === 'edges+e-10',
    'natural order when all are ready, got ' + first.slice(0, 11).join(','));
  await shot('all-ready');

  // e-517 goes down: counted in the summary, and the first row of the grid.
  await post(SIM + '/sim/clusters/e-517/down');
  await page.waitForFunction(() => / 1 unreachable/.test(document.getElementById('dig-ready').textContent), null, { timeout: WAIT });
  const s = await summary(page);
  check(s.startsWith('Ready on 1000 of 1001 clusters'), 'never Ready on all while one is unreachable, got ' + s);
  await page.waitForFunction(() => {
    const r = document.querySelector('#grid .vbody .vrow[data-key]');
    return r && r.dataset.key === 'edges+e-517';
  }, null, { timeout: WAIT });
  check(await page.locator('#grid .cell[data-cluster="edges+e-517"][data-state="unreachable"]').count() === 1,
    'its web cell is unreachable');
  await shot('one-down-first');

  // From the fleet overview: its problem strip names the cluster, and one
  // click opens the DIG filtered to it among the 1,001.
  await page.goto(ECO + '/ui/#/digs');
  const problem = page.locator('#problems li.problem[data-kind="unreachable"] a');
  await problem.waitFor({ timeout: WAIT });
  check((await problem.textContent()).includes('edges+e-517'), 'the problem names edges+e-517');
  await shot('overview-problem');
  await problem.click();
  await page.waitForFunction(() => {
    const shown = document.getElementById('shown');
    return shown && shown.textContent === '1 of 1001 clusters';
  }, null, { timeout: WAIT });
  check((await keys(page)).join() === 'edges+e-517', 'the problem\'s link shows e-517 only');

  // The filter alone: that cluster, and the URL says so.
  await page.goto(PAGE);
  await page.locator('#grid .vbody .vrow[data-key="edges+e-517"]').waitFor({ timeout: WAIT });
  await page.selectOption('#f-state', 'unreachable');
  await page.waitForFunction(() => document.getElementById('shown').textContent === '1 of 1001 clusters', null, { timeout: WAIT });
  check((await keys(page)).join() === 'edges+e-517', 'the unreachable filter shows e-517 only');
  check(page.url().endsWith('#/dig/demo/twotier/v1/twotier-dig?state=unreachable'), 'the URL carries the filter, got ' + page.url());
  // Keyboard: Tab reaches the row, Enter opens its drill-down.
  await page.locator('#grid .vbody .vrow[data-key="edges+e-517"]').focus();
  await page.keyboard.press('Enter');
  await page.locator('#drilldown[data-cluster="edges+e-517"]').getByText(/has been unreachable/).waitFor({ timeout: WAIT });
  await shot('unreachable-filter');

  // Shared: the same URL loaded afresh shows the filtered view.
  await page.goto('about:blank');
  await page.goto(PAGE + '?state=unreachable');
  await page.waitForFunction(() => document.getElementById('shown') && document.getElementById('shown').textContent === '1 of 1001 clusters',
    null, { timeout: WAIT });
  check(await page.locator('#f-state').inputValue() === 'unreachable', 'the loaded URL selects the filter');

  // Grouped by provider, with counts; search on the name.
  await page.selectOption('#f-state', '');
  await page.selectOption('#f-group', 'provider');
  await page.locator('#f-q').fill('e-51');
  await page.waitForFunction(() => document.getElementById('shown').textContent === '11 of 1001 clusters', null, { timeout: WAIT });
  const groups = await page.locator('#grid .vgroup').allTextContents();
  check(groups.length === 1 && groups[0] === 'edges 11 clusters: 10 ready, 1 with problems', 'one group with counts, got ' + groups.join(' / '));
  const found = await keys(page);
  check(found[0] === 'edges+e-517' && found[1] === 'edges+e-51' && found[2] === 'edges+e-510',
    'problems first inside the group, then natural order, got ' + found.join(','));
  check(page.url().endsWith('?group=provider&q=e-51') || page.url().endsWith('?q=e-51&group=provider'),
    'group and search in the URL, got ' + page.url());
  await shot('grouped');

  // A narrow window: the page fits, the grid scrolls inside itself.
  await page.setViewportSize({ width: 420, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, 'nothing wider than a narrow window, overflows by ' + overflow + ' px');
  await shot('narrow');
  await post(SIM + '/sim/clusters/e-517/up');
});
