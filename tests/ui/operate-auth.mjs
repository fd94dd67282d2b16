// The console against an eco that wants tokens (operate_test.cc,
// Operate.TokenProtected…): it asks for one, keeps it for the tab only
// (nothing in local storage or the URL), names the user, hides what a
// project user may not do (logical cloud and cluster writes) and says why
// the cluster page shows less; sign out forgets the token; an administrator
// gets everything. ADMIN_TOKEN and USER_TOKEN come from the test.
import {
  ECO, WAIT, check, runInBrowser,
} from './browser.mjs';

const ADMIN = process.env.ADMIN_TOKEN;
const USER = process.env.USER_TOKEN;

async function signIn(page, token) {
  await page.locator('#sign-in').waitFor({ timeout: WAIT });
  check(await page.locator('#token-form').isVisible(), 'the token form is shown');
  await page.locator('#token').fill(token);
  await page.locator('#token').press('Enter');
  await page.locator('#sign-in').waitFor({ state: 'detached', timeout: WAIT });
}

async function noTokenKept(page, token) {
  const where = await page.evaluate(() => ({ local: JSON.stringify(localStorage), cookie: document.cookie, url: location.href }));
  check(!where.local.includes(token) && where.local === '{}', 'nothing in local storage, got ' + where.local);
  check(!where.cookie.includes(token), 'no cookie holds the token');
  check(!where.url.includes(token), 'the URL holds no token');
}

await runInBrowser('operate-auth', async (page, shot) => {
  await page.goto(ECO + '/ui/');
  await page.locator('#sign-in').waitFor({ timeout: WAIT });
  await shot('sign-in');
  await signIn(page, USER);
  await page.locator('tr[data-dig="demo/twotier/v1/twotier-dig"]').waitFor({ timeout: WAIT });
  check((await page.locator('#user').textContent()) === 'alice', 'the header names the user');
  check(await page.locator('#sign-out').isVisible(), 'Sign out is offered');
  await page.locator('tr[data-lc="demo/fleet"]').waitFor({ timeout: WAIT });
  check(await page.locator('tr[data-lc="demo/fleet"] button').count() === 0, 'a project user gets no logical cloud actions');
  check(await page.locator('#provider-section').isHidden(), 'no providers for a project user');
  await noTokenKept(page, USER);
  check(await page.evaluate(() => sessionStorage.getItem('eco.token')) === USER, 'the token is kept for the tab');
  await shot('overview-project-user');

  // Their DIG's operations are there (the project is theirs).
  await page.locator('tr[data-dig="demo/twotier/v1/twotier-dig"] a').click();
  await page.locator('#dig-actions button[data-op="approve"]').waitFor({ timeout: WAIT });

  // The clusters page: the catalog only, and why.
  await page.locator('nav a[data-nav="clusters"]').click();
  const note = page.locator('#clusters-note.notice');
  await note.waitFor({ timeout: WAIT });
  const why = await note.textContent();
  check(why.includes('403') && why.includes('administrator'), 'the page says why the rest is missing, got ' + why);
  await page.locator('tr[data-cluster="edges+edge1"]').waitFor({ timeout: WAIT });
  check((await page.locator('tr[data-cluster="edges+edge1"] .chip').allTextContents()).includes('edge'), 'labels still shown');
  check(await page.locator('#register-agent').count() === 0, 'no agent registration for a project user');
  await noTokenKept(page, USER);
  await shot('clusters-project-user');

  // Sign out: the token is forgotten and asked for again.
  await page.locator('#sign-out').click();
  await page.locator('#sign-in').waitFor({ timeout: WAIT });
  check(await page.evaluate(() => sessionStorage.getItem('eco.token')) === null, 'sign out forgets the token');

  // An administrator: providers, logical cloud actions, registration.
  await signIn(page, ADMIN);
  await page.locator('#register-agent').waitFor({ timeout: WAIT });
  check((await page.locator('#user').textContent()).startsWith('ops'), 'the header names the administrator');
  await page.locator('tr[data-cluster="edges+edge1"] td.last-seen').waitFor({ timeout: WAIT });
  await page.goto(ECO + '/ui/#/digs');
  await page.locator('tr[data-lc="demo/fleet"] button[data-op="lc-instantiate"]').waitFor({ timeout: WAIT });
  await page.locator('#providers a[data-provider="edges"]').waitFor({ timeout: WAIT });
  await noTokenKept(page, ADMIN);

  // A narrow window: the header wraps, the page stays usable.
  await page.setViewportSize({ width: 420, height: 800 });
  await shot('overview-narrow');
});
