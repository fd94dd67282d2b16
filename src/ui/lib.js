// What every page of the console shares: building elements, calling eco's
// /v2 API (the same calls any client makes), following status change
// streams, the token, errors, and small formatting helpers. Plain ES
// modules served as they are: the binary embeds the files, so the console
// needs no build step and nothing from the internet.

export const view = document.getElementById('view');
const errorBox = document.getElementById('error');
const liveBox = document.getElementById('live');
const tokenForm = document.getElementById('token-form');

// The token lives in this tab only (sessionStorage): never in the URL, in
// local storage or in a cookie.
let token = sessionStorage.getItem('eco.token') || '';
export function setToken(t) {
  token = t;
  if (t) sessionStorage.setItem('eco.token', t);
  else sessionStorage.removeItem('eco.token');
}
export function hasToken() {
  return token !== '';
}

export class ApiError extends Error {
  constructor(status, message, path) {
    super(message);
    this.status = status;
    this.path = path;
  }
}

// Builds an element; strings become text nodes (never HTML).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export const enc = encodeURIComponent;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function headers(extra) {
  return Object.assign(token ? { Authorization: 'Bearer ' + token } : {}, extra || {});
}

// The API's error body is {"code": N, "message": "..."}: shown as it is.
async function errorFrom(r, path) {
  const text = await r.text();
  let message = text;
  try {
    const body = JSON.parse(text);
    if (body && typeof body.message === 'string') message = body.message;
  } catch (e) { /* not JSON: the text itself */ }
  if (r.status === 401) {
    tokenForm.hidden = false;
    // The router asks for a token again (console-ops).
    window.dispatchEvent(new Event('eco:unauthorized'));
  }
  return new ApiError(r.status, message || r.statusText, path);
}

export async function api(path, signal) {
  const r = await fetch(path, { headers: headers(), signal });
  if (!r.ok) throw await errorFrom(r, path);
  return r.json();
}

// A write: method, path and an optional JSON body. Answers the parsed body
// (null when there is none); an error status throws ApiError with the API's
// own message, for the page to show.
export async function send(method, path, body, signal) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const r = await fetch(path, init);
  if (!r.ok) throw await errorFrom(r, path);
  const text = await r.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (e) {
    return text;
  }
}

export function errorText(e) {
  return e instanceof ApiError ? `HTTP ${e.status} from ${e.path}: ${e.message}` : String((e && e.message) || e);
}

export function showError(e) {
  if (!e || e.name === 'AbortError') return;
  errorBox.hidden = false;
  errorBox.textContent = errorText(e);
}

export function clearError() {
  errorBox.hidden = true;
  errorBox.textContent = '';
}

export function setLive(on, text) {
  liveBox.hidden = false;
  liveBox.className = 'live ' + (on ? 'on' : 'off');
  liveBox.textContent = text;
}

export function hideLive() {
  liveBox.hidden = true;
}

// Follows a status change stream: calls onDoc for every line, reconnects
// after a lost connection, stops when the returned function is called.
export function follow(path, onDoc) {
  const ctl = new AbortController();
  let stopped = false;
  (async () => {
    while (!stopped) {
      try {
        const r = await fetch(path, { headers: headers(), signal: ctl.signal });
        if (!r.ok) throw await errorFrom(r, path);
        setLive(true, 'live');
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          for (let i; (i = buf.indexOf('\n')) >= 0;) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line.trim()) onDoc(JSON.parse(line));
          }
        }
      } catch (e) {
        if (stopped) return;
        showError(e);
      }
      if (stopped) return;
      setLive(false, 'reconnecting…');
      await sleep(2000);
    }
  })();
  return () => {
    stopped = true;
    ctl.abort();
  };
}

// Runs fn now and again after it finished, until the returned function is
// called: after ms, or five times as long as fn took if longer (a fleet's
// answer can take eco a second: a page never keeps it busy). `paced`
// hears each wait.
export function every(ms, fn, paced) {
  let t = null;
  let stopped = false;
  const run = async () => {
    const t0 = performance.now();
    await fn();
    if (stopped) return;
    const wait = Math.max(ms, 5 * (performance.now() - t0));
    if (paced) paced(wait);
    t = setTimeout(run, wait);
  };
  run();
  return () => {
    stopped = true;
    clearTimeout(t);
  };
}

export function badge(kind, text) {
  return h('span', { class: 'badge s-' + kind }, text);
}

export function readyBadge(status) {
  if (!status) return badge('none', '—');
  return badge(status === 'Ready' ? 'ready' : 'progress', status);
}

export function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? t : d.toLocaleString();
}

// Every resource a readyCounts object counts (Stale: a report older than the grace).
export function countAll(c) {
  return c ? c.Ready + c.NotReady + c.NotPresent + (c.Stale || 0) : 0;
}

// The connectivity badge of a cluster eco cannot hear from: its agent
// silent past the grace, or the ready monitor's watches failing.
export function unreachableBadge(u) {
  return h('span', { title: u.error }, badge('unreachable', 'Unreachable'), u.since ? ' since ' + when(u.since) : '');
}

// Natural order: digits compare as numbers, so e-2 sorts before e-10.
const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
export const naturalCompare = (a, b) => collator.compare(a, b);

export function digPath(p, ca, v, dig) {
  return `/v2/projects/${enc(p)}/composite-apps/${enc(ca)}/${enc(v)}/deployment-intent-groups/${enc(dig)}`;
}

export function digHref(p, ca, v, dig) {
  return `#/dig/${enc(p)}/${enc(ca)}/${enc(v)}/${enc(dig)}`;
}

// --- console-ops: who is signed in, and what the console offers them ---
// GET /v2/whoami decides what is shown; the API still decides what is
// allowed (a hidden button is a courtesy, a 403 the rule).
let identity = null;
export function setIdentity(who) {
  identity = who;
}
export function whoami() {
  return identity || { auth: false, admin: true };
}
// Project users may not write logical clouds, cluster providers or clusters.
export const mayAdminister = () => whoami().admin === true;

// A modal <dialog>: Esc and the Cancel button close it; the caller fills
// its body and wires its own confirm button. Answers {dialog, body, close}.
export function openDialog(title, { id, onClose } = {}) {
  const body = h('div', { class: 'dialog-body' });
  const dialog = h('dialog', { class: 'op', id, 'aria-label': title }, h('h2', {}, title), body);
  const close = () => {
    if (dialog.open) dialog.close();
  };
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (onClose) onClose();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, body, close };
}

// Replaces a list's children by key, keeping the elements whose data did not
// change: a refresh every few seconds must not take the keyboard focus away.
export function patch(parent, items, keyOf, build, empty) {
  const old = parent._rows || new Map();
  const next = new Map();
  const els = items.map((it) => {
    const key = keyOf(it);
    const sig = JSON.stringify(it);
    const was = old.get(key);
    const el = was && was.sig === sig ? was.el : build(it);
    next.set(key, { sig, el });
    return el;
  });
  parent._rows = next;
  const want = els.length ? els : [empty()];
  // Only what moved is moved: a focused element left in place keeps its focus.
  want.forEach((el, i) => {
    const at = parent.children[i];
    if (at !== el) parent.insertBefore(el, at || null);
  });
  while (parent.children.length > want.length) parent.lastElementChild.remove();
}
