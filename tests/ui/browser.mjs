// What the console's browser scripts share: Chromium launched for a closed
// network, checks that fail with a message, screenshots named by the
// script's prefix and step, and API calls (with an optional token).
//
// Environment: ECO_URL, SIM_URL (kube-sim's fault API), SHOTS_DIR
// (screenshots), CHROMIUM (the browser binary).
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const ECO = process.env.ECO_URL;
export const SIM = process.env.SIM_URL;
export const SHOTS = process.env.SHOTS_DIR;
export const WAIT = 60000;

export function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

export async function call(method, url, body, token) {
  const headers = {};
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  check(r.status >= 200 && r.status < 300, `${method} ${url} answered ${r.status}: ${text}`);
  return text ? JSON.parse(text) : null;
}

export const post = (url, body, token) => call('POST', url, body, token);

// Runs `body(page, shot)` in a fresh Chromium page; screenshots are
// SHOTS_DIR/<prefix>-NN-<name>.png. Exits non-zero with every failure.
export async function runInBrowser(prefix, body, { viewport = { width: 1280, height: 860 } } = {}) {
  fs.mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    // As root, in a closed network, perhaps with a small /dev/shm: no sandbox,
    // no background connections, shared memory in /tmp.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const failures = [];
  let step = 0;
  let page = null;
  try {
    page = await browser.newPage({ viewport });
    page.on('pageerror', (e) => failures.push('uncaught in the page: ' + e.message));
    const shot = async (name) => {
      step += 1;
      const file = path.join(SHOTS, `${prefix}-${String(step).padStart(2, '0')}-${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      console.log('screenshot', file);
    };
    await body(page, shot);
  } catch (e) {
    failures.push(e.stack || e.message);
    // What the page showed when it failed.
    if (page) await page.screenshot({ path: path.join(SHOTS, `${prefix}-failed.png`), fullPage: true }).catch(() => {});
  } finally {
    await browser.close();
  }
  if (failures.length) {
    console.error(failures.join('\n'));
    process.exit(1);
  }
  console.log(`${prefix}: all checks passed`);
}
