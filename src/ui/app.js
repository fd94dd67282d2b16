// The eco console's router: every page is a URL (#/page/...?filters), so it
// can be shared; the page's module renders into <main> and registers what
// must stop (streams, timers) when it is left. Before any page, GET
// /v2/whoami says who is signed in and what to offer them.
import {
  view, h, api, clearError, showError, hideLive, setToken, hasToken, setIdentity, ApiError,
} from './lib.js';
import * as overview from './overview.js';
import * as dig from './dig.js';
import * as clusters from './clusters.js';

// #/PAGE/... -> the module and how many path parameters it takes.
const pages = {
  digs: { module: overview, nav: 'digs', params: 0 },
  dig: { module: dig, nav: 'digs', params: 4 },
  clusters: { module: clusters, nav: 'clusters', params: 0 },
};

const tokenForm = document.getElementById('token-form');
const userBox = document.getElementById('user');
const signOut = document.getElementById('sign-out');
let cleanup = [];
let known = false;  // whoami answered for the token in use

function askForToken(why) {
  userBox.hidden = true;
  signOut.hidden = !hasToken();
  tokenForm.hidden = false;
  view.replaceChildren(h('div', { class: 'sign-in', id: 'sign-in' },
    h('h1', {}, 'Sign in'),
    h('p', {}, why),
    h('p', { class: 'muted' }, 'Enter a bearer token in the header. The console keeps it for this tab only ' +
      '(session storage): never in the URL, in local storage or in a cookie. Sign out forgets it.')));
  document.getElementById('token').focus();
}

// Who is signed in: answers false when a token is needed first.
async function identify(signal) {
  if (known) return true;
  let who;
  try {
    who = await api('/v2/whoami', signal);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      askForToken(hasToken() ? `eco refused this token: ${e.message}` : 'This eco wants a bearer token.');
      return false;
    }
    throw e;
  }
  setIdentity(who);
  known = true;
  tokenForm.hidden = true;
  userBox.hidden = !who.auth;
  userBox.textContent = who.user ? `${who.user}${who.admin ? ' (administrator)' : ''}` : '';
  userBox.title = who.admin ? 'administrator: every project' : 'projects: ' + (who.projects || []).join(', ');
  signOut.hidden = !who.auth && !hasToken();
  return true;
}

async function route() {
  for (const stop of cleanup) stop();
  cleanup = [];
  const ctl = new AbortController();
  cleanup.push(() => ctl.abort());
  clearError();
  hideLive();
  const hash = location.hash.replace(/^#\/?/, '');
  const q = hash.indexOf('?');
  const parts = (q < 0 ? hash : hash.slice(0, q)).split('/').filter((x, i) => i === 0 || x !== '').map(decodeURIComponent);
  if (!parts[0]) parts[0] = 'digs';
  let page = pages[parts[0]];
  if (!page || parts.length - 1 < page.params) page = pages.digs;
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.dataset.nav === page.nav);
    if (a.dataset.nav === page.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const ctx = {
    signal: ctl.signal,
    params: parts.slice(1),
    query: new URLSearchParams(q < 0 ? '' : hash.slice(q + 1)),
    onCleanup: (fn) => cleanup.push(fn),
  };
  try {
    if (!(await identify(ctl.signal))) return;
    await page.module.render(ctx);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      known = false;
      askForToken(`eco refused this token: ${e.message}`);
      return;
    }
    showError(e);
    if (view.textContent === 'Loading…') view.replaceChildren();
  }
}

tokenForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = document.getElementById('token');
  setToken(input.value.trim());
  input.value = '';
  known = false;
  route();
});

signOut.addEventListener('click', () => {
  setToken('');
  setIdentity(null);
  known = false;
  route();
});

// A token refused while a page polls (revoked, expired): ask again. Not
// while signing in, when whoami's own 401 already asked.
window.addEventListener('eco:unauthorized', () => {
  if (!known) return;
  known = false;
  route();
});

window.addEventListener('hashchange', route);
route();
