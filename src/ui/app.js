// The eco console's router: every page is a URL (#/page/...), so it can be
// shared; the page's module renders into <main> and registers what must
// stop (streams, timers) when it is left.
import { view, clearError, showError, hideLive, setToken } from './lib.js';
import * as overview from './overview.js';
import * as dig from './dig.js';
import * as clusters from './clusters.js';

// #/PAGE/... -> the module and how many path parameters it takes.
const pages = {
  digs: { module: overview, nav: 'digs', params: 0 },
  dig: { module: dig, nav: 'digs', params: 4 },
  clusters: { module: clusters, nav: 'clusters', params: 0 },
};

let cleanup = [];

async function route() {
  for (const stop of cleanup) stop();
  cleanup = [];
  const ctl = new AbortController();
  cleanup.push(() => ctl.abort());
  clearError();
  hideLive();
  const parts = (location.hash.replace(/^#\/?/, '') || 'digs').split('/').map(decodeURIComponent);
  let page = pages[parts[0]];
  if (!page || parts.length - 1 < page.params) page = pages.digs;
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.dataset.nav === page.nav);
  }
  const ctx = {
    signal: ctl.signal,
    params: parts.slice(1),
    onCleanup: (fn) => cleanup.push(fn),
  };
  try {
    await page.module.render(ctx);
  } catch (e) {
    showError(e);
    if (view.textContent === 'Loading…') view.replaceChildren();
  }
}

document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = document.getElementById('token');
  setToken(input.value.trim());
  input.value = '';
  document.getElementById('token-form').hidden = true;
  route();
});

window.addEventListener('hashchange', route);
route();
