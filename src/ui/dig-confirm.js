// Confirmation of a write from the DIG page: a modal that says what will
// happen, then the call; a refusal shows the API's own message in the
// dialog and the page goes on.
import { h, send, errorText } from './lib.js';

// Opens the dialog; `call` runs on Confirm (a send(...) promise). Answers
// a promise of true when the call succeeded, false when cancelled or refused.
export function confirmCall({ title, text, confirm, call }) {
  return new Promise((resolve) => {
    const msg = h('p', { class: 'dlg-msg', id: 'confirm-message', role: 'status' });
    const yes = h('button', { type: 'button', class: 'primary', id: 'confirm-yes' }, confirm || 'Confirm');
    const no = h('button', { type: 'button', id: 'confirm-no' }, 'Cancel');
    const dlg = h('dialog', { class: 'confirm', id: 'confirm', 'aria-labelledby': 'confirm-title' },
      h('h2', { id: 'confirm-title' }, title), h('p', {}, text), msg, h('div', { class: 'dlg-buttons' }, no, yes));
    let done = false;
    const close = (ok) => {
      if (done) return;
      done = true;
      dlg.close();
      dlg.remove();
      resolve(ok);
    };
    no.addEventListener('click', () => close(false));
    dlg.addEventListener('cancel', () => close(false));
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      msg.textContent = 'Sending…';
      try {
        await call();
        close(true);
      } catch (e) {
        // Refused (409 and the like): the API's reason stays on screen.
        msg.textContent = errorText(e);
        msg.classList.add('refused');
        no.textContent = 'Close';
      }
    });
    document.body.append(dlg);
    dlg.showModal();
    no.focus();
  });
}

export const post = (path, body) => () => send('POST', path, body);
