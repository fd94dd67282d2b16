// bench/console/console_bench.mjs: the DIG page at fleet scale (see
// docs/performance.md, "Console"). Onboards the kube-sim fleet whose
// kubeconfigs are in KUBECONFIGS into the eco at ECO_URL through the REST
// API, deploys one DIG of APPS apps (one ConfigMap each) on every
// cluster, waits until every object is Applied, then measures:
//   - GET DIG/status?output=clusters: bytes and eco's time (to the first
//     byte and to the last), RUNS times;
//   - the DIG page in Chromium, RUNS fresh pages: navigation to the grid
//     drawn (the page's performance mark eco-grid-painted, set in the
//     frame after it drew) and each filter change to its drawn view
//     (the page's measure eco-filter).
// Prints one JSON line of results. Environment: ECO_URL, KUBECONFIGS,
// APPS (10), RUNS (3), CHROMIUM (/usr/bin/chromium), PLAYWRIGHT (the
// playwright-core module, default tests/ui/node_modules).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { chromium } = await import(process.env.PLAYWRIGHT ||
  path.join(here, '../../tests/ui/node_modules/playwright-core/index.mjs'));
const ECO = process.env.ECO_URL;
const KUBECONFIGS = process.env.KUBECONFIGS;
const APPS = Number(process.env.APPS || 10);
const RUNS = Number(process.env.RUNS || 3);
const CA = '/v2/projects/p/composite-apps/ca/v1';
const DIG = CA + '/deployment-intent-groups/dig';
const note = (s) => process.stderr.write(`[console-bench] ${s}\n`);
const now = () => performance.now();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function call(method, p, body, expect) {
  const init = { method };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'Content-Type': 'application/json' };
  }
  const r = await fetch(ECO + p, init);
  const text = await r.text();
  if (expect && !expect.includes(r.status)) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}
const named = (n, spec) => ({ metadata: { name: n }, ...(spec ? { spec } : {}) });
const parts = (meta, file, filename) => {
  const f = new FormData();
  f.append('metadata', JSON.stringify(meta));
  f.append('file', new Blob([file]), filename);
  return f;
};

async function onboard() {
  const names = fs.readdirSync(KUBECONFIGS).filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -5));
  const t = now();
  await call('POST', '/v2/cluster-providers', named('prov'), [201]);
  await call('POST', '/v2/projects', named('p'), [201]);
  await call('POST', '/v2/projects/p/logical-clouds', named('lc', { level: '0' }), [201]);
  let next = 0;
  const worker = async () => {
    for (let i; (i = next++) < names.length;) {
      const n = names[i];
      await call('POST', '/v2/cluster-providers/prov/clusters',
        parts(named(n), fs.readFileSync(path.join(KUBECONFIGS, n + '.yaml')), 'kubeconfig'), [201]);
      await call('POST', `/v2/cluster-providers/prov/clusters/${n}/labels`, { clusterLabel: 'edge' }, [201]);
      await call('POST', '/v2/projects/p/logical-clouds/lc/cluster-references',
        named('r-' + n, { clusterProvider: 'prov', cluster: n }), [201]);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  await call('POST', '/v2/projects/p/logical-clouds/lc/instantiate', {}, [202]);
  for (;;) {
    const s = await call('GET', '/v2/projects/p/logical-clouds/lc/status?status=deployed&output=summary');
    if (s.deployedStatus === 'Instantiated') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  note(`onboarded ${names.length} clusters in ${((now() - t) / 1000).toFixed(1)} s`);
  return names.length;
}

function chart(app) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-bench-'));
  fs.mkdirSync(path.join(dir, app, 'templates'), { recursive: true });
  fs.writeFileSync(path.join(dir, app, 'Chart.yaml'), `apiVersion: v2\nname: ${app}\nversion: 0.1.0\n`);
  fs.writeFileSync(path.join(dir, app, 'templates', 'config.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${app}-config\ndata:\n  setting: "1"\n`);
  execFileSync('tar', ['czf', path.join(dir, app + '.tgz'), '-C', dir, app]);
  const tgz = fs.readFileSync(path.join(dir, app + '.tgz'));
  fs.rmSync(dir, { recursive: true });
  return tgz;
}

async function deploy(clusters) {
  await call('POST', '/v2/projects/p/composite-apps', named('ca', { compositeAppVersion: 'v1' }), [201]);
  const apps = Array.from({ length: APPS }, (_, i) => 'app' + i);
  for (const a of apps) await call('POST', CA + '/apps', parts(named(a), chart(a), a + '.tgz'), [201]);
  await call('POST', CA + '/composite-profiles', named('cp'), [201]);
  await call('POST', CA + '/deployment-intent-groups', named('dig', { compositeProfile: 'cp', version: 'r1', logicalCloud: 'lc' }), [201]);
  await call('POST', DIG + '/generic-placement-intents', named('gpi'), [201]);
  for (const a of apps) {
    await call('POST', DIG + '/generic-placement-intents/gpi/app-intents',
      named(a, { app: a, intent: { allOf: [{ clusterProvider: 'prov', clusterLabel: 'edge' }] } }), [201]);
  }
  await call('POST', DIG + '/intents', named('i', { intent: { genericPlacementIntent: 'gpi' } }), [201]);
  await call('POST', DIG + '/approve', {}, [202]);
  const t = now();
  await call('POST', DIG + '/instantiate', {}, [202]);
  for (;;) {
    const s = await call('GET', DIG + '/status?status=deployed&output=summary');
    if (((s.deployedCounts || {}).Applied || 0) >= clusters * APPS) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  note(`${clusters * APPS} objects Applied in ${((now() - t) / 1000).toFixed(1)} s`);
}

// eco's answer: time to the first byte, to the last, and its size.
async function timeGet(p) {
  const t0 = now();
  const r = await fetch(ECO + p);
  const t1 = now();
  const buf = Buffer.from(await r.arrayBuffer());
  return { status: r.status, firstByteMs: t1 - t0, totalMs: now() - t0, bytes: buf.length };
}

// The watch: time to its first line (the page's first document).
async function timeWatch(p) {
  const ctl = new AbortController();
  const t0 = now();
  const r = await fetch(ECO + p, { signal: ctl.signal });
  const t1 = now();
  let bytes = 0;
  for await (const chunk of r.body) {
    bytes += chunk.length;
    if (chunk.includes(10)) break;
  }
  const t2 = now();
  ctl.abort();
  return { status: r.status, firstByteMs: t1 - t0, firstLineMs: t2 - t0, bytes };
}

async function measureApi() {
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await timeGet(DIG + '/status?output=clusters'));
  const out = { outputClusters: runs, watch: [] };
  for (let i = 0; i < RUNS; i++) out.watch.push(await timeWatch(DIG + '/status?output=clusters&watch=true'));
  return out;
}

async function measurePage() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking'],
  });
  const runs = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      await page.goto(ECO + '/ui/#/dig/p/ca/v1/dig');
      await page.waitForFunction(() => performance.getEntriesByName('eco-grid-painted').length > 0, null, { timeout: 120000 });
      const r = await page.evaluate(() => ({
        gridPaintedMs: performance.getEntriesByName('eco-grid-painted')[0].startTime,
        // The page's modules loaded and run.
        domContentLoadedMs: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
        // The stream asked for (the page's modules run, the DIG read) and
        // its first document parsed.
        clustersAskedMs: performance.getEntriesByName('eco-clusters-asked')[0].startTime,
        clustersReceivedMs: performance.getEntriesByName('eco-clusters-received')[0].startTime,
        rowsInDom: document.querySelectorAll('#grid .vbody .vrow').length,
        heapMB: performance.memory ? performance.memory.usedJSHeapSize / 1048576 : null,
      }));
      // Each filter change, timed by the page from the change to the frame after it drew.
      const filter = async (sel, value, fill) => {
        const before = await page.evaluate(() => performance.getEntriesByName('eco-filter').length);
        if (fill) await page.locator(sel).fill(value);
        else await page.selectOption(sel, value);
        await page.waitForFunction((n) => performance.getEntriesByName('eco-filter').length > n, before, { timeout: 60000 });
        return page.evaluate(() => performance.getEntriesByName('eco-filter').pop().duration);
      };
      r.filterMs = {
        stateFailed: await filter('#f-state', 'failed'),
        stateAll: await filter('#f-state', ''),
        groupLabel: await filter('#f-group', 'label'),
        searchE99: await filter('#f-q', 'e-99', true),
      };
      if (i === 0 && process.env.SHOT) await page.screenshot({ path: process.env.SHOT });
      runs.push(r);
      await page.close();
    }
  } finally {
    await browser.close();
  }
  return runs;
}

// MEASURE_ONLY=N: eco already holds the deployed fleet of N clusters (a
// previous run's data directory); measure again without onboarding.
let clusters = Number(process.env.MEASURE_ONLY || 0);
if (!clusters) {
  clusters = await onboard();
  await deploy(clusters);
}
const api = await measureApi();
const page = await measurePage();
const ok = api.outputClusters.filter((r) => r.status === 200);
console.log(JSON.stringify({
  clusters, apps: APPS, api, page,
  summary: {
    outputClustersBytes: ok.length ? ok[0].bytes : null,
    outputClustersMsMedian: ok.length ? median(ok.map((r) => r.totalMs)) : null,
    gridPaintedMsMedian: median(page.map((r) => r.gridPaintedMs)),
    clustersAskedMsMedian: median(page.map((r) => r.clustersAskedMs)),
    clustersReceivedMsMedian: median(page.map((r) => r.clustersReceivedMs)),
    watchFirstLineMsMedian: median(api.watch.map((r) => r.firstLineMs)),
    filterMsMax: Math.max(...page.flatMap((r) => Object.values(r.filterMs))),
  },
}));
