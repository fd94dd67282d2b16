// The DIG page's grid: clusters down, apps across, only the rows in view
// in the DOM. A hand-written windowed list rather than a library: the
// console has no build step to bring one in, and every row has the same
// height, so the visible slice is one division of scrollTop.
import { h } from './lib.js';
import { cellOf, cellState, clusterKey, stateWords } from './dig-data.js';

export const ROW_H = 30;
const OVERSCAN = 8;

// onOpen(cluster, app) opens a cell's drill-down (app null: the row's worst cell).
export function createGrid(onOpen) {
  const head = h('div', { class: 'vrow vhead', role: 'row' });
  const body = h('div', { class: 'vbody', role: 'rowgroup' });
  const el = h('div', { class: 'vgrid', id: 'grid', role: 'grid', 'aria-label': 'Clusters and apps' }, head, body);
  let doc = { apps: [] };
  let rows = [];
  let selected = null;  // {key, app}
  let cols = '';
  let queued = false;

  const cellEl = (c, i, app) => {
    const n = cellOf(doc, c.cells[i]);
    const key = clusterKey(c);
    const s = cellState(c, n);
    if (!n) return h('div', { class: 'cell s-none', 'data-app': app, 'data-cluster': key, 'data-state': 'none' }, '–');
    const sel = selected && selected.key === key && selected.app === app;
    return h('div', {
      class: `cell s-${s}${sel ? ' selected' : ''}`, role: 'gridcell',
      'data-app': app, 'data-cluster': key, 'data-state': s,
      title: `${app} on ${key}: ${stateWords[s]}` + (n.warnings ? `, ${n.warnings} field warning${n.warnings > 1 ? 's' : ''}` : ''),
      onclick: (ev) => { ev.stopPropagation(); onOpen(c, app); },
    }, `${n.ready}/${n.total}`, n.warnings ? h('span', { class: 'warn-mark', 'data-warnings': String(n.warnings) }, ' ⚠') : null);
  };

  const rowEl = (r, idx) => {
    let e;
    if (r.group) {
      const g = r.group;
      e = h('div', { class: 'vrow vgroup', role: 'row', 'data-group': g.name },
        h('div', { class: 'gname' }, g.name, ' ',
          h('span', { class: 'muted' }, `${g.list.length} cluster${g.list.length === 1 ? '' : 's'}: ${g.ready} ready`),
          g.problems ? h('span', { class: 'gproblems' }, `, ${g.problems} with problems`) : null));
    } else {
      const c = r.c;
      const key = clusterKey(c);
      e = h('div', {
        class: `vrow s-row-${c.state}${selected && selected.key === key ? ' selected' : ''}`, role: 'row', tabindex: '0',
        'data-key': key, 'data-cluster-state': c.state, 'data-row': String(idx),
        onclick: () => onOpen(c, null),
      }, h('div', { class: 'cname', title: `${key}: ${stateWords[c.state] || c.state}` },
        h('span', { class: `dot s-${c.state}` }), key,
        c.wave ? h('span', { class: 'chip', title: `rollout wave ${c.wave}: ${c.rollout || 'pending'}` },
          c.wave + (c.rollout && c.rollout !== 'done' ? ' · ' + c.rollout : '')) : null),
      doc.apps.map((a, i) => cellEl(c, i, a)));
    }
    e.style.top = idx * ROW_H + 'px';
    e.style.gridTemplateColumns = cols;
    return e;
  };

  const paint = () => {
    queued = false;
    const top = Math.max(0, el.scrollTop - head.offsetHeight);
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(rows.length, Math.ceil((top + (el.clientHeight || 600)) / ROW_H) + OVERSCAN);
    const focusKey = document.activeElement && el.contains(document.activeElement) ? document.activeElement.dataset.key : null;
    const out = [];
    for (let i = first; i < last; i++) out.push(rowEl(rows[i], i));
    body.replaceChildren(...out);
    if (focusKey) {
      const again = body.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
      if (again) again.focus({ preventScroll: true });
    }
  };
  const schedule = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(paint);
  };
  el.addEventListener('scroll', schedule, { passive: true });

  // Arrows move between rows, Enter opens the row's drill-down.
  el.addEventListener('keydown', (ev) => {
    const row = ev.target.closest && ev.target.closest('.vrow[data-row]');
    if (!row) return;
    const i = Number(row.dataset.row);
    if (ev.key === 'Enter') {
      ev.preventDefault();
      const r = rows[i];
      if (r && r.c) onOpen(r.c, null);
    } else if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      let j = i;
      do j += ev.key === 'ArrowDown' ? 1 : -1; while (rows[j] && !rows[j].c);
      if (!rows[j]) return;
      const y = j * ROW_H + head.offsetHeight;
      if (y < el.scrollTop + head.offsetHeight) el.scrollTop = y - head.offsetHeight;
      else if (y + ROW_H > el.scrollTop + el.clientHeight) el.scrollTop = y + ROW_H - el.clientHeight;
      paint();
      const next = body.querySelector(`[data-row="${j}"]`);
      if (next) next.focus({ preventScroll: true });
    }
  });

  return {
    el,
    // Synchronous: the caller marks the paint right after.
    set(d, r, sel) {
      doc = d;
      selected = sel;
      const appCols = doc.apps.map(() => 'minmax(64px, 1fr)').join(' ');
      cols = `minmax(120px, 260px) ${appCols}`;
      rows = r;
      body.style.height = rows.length * ROW_H + 'px';
      head.style.gridTemplateColumns = cols;
      head.replaceChildren(h('div', { class: 'cname', role: 'columnheader' }, 'Cluster \\ App'),
        ...doc.apps.map((a) => h('div', { class: 'hcell', role: 'columnheader', title: a }, a)));
      paint();
    },
    toTop() { el.scrollTop = 0; },
  };
}
