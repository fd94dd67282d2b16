// Agent clusters from the console: register one (spec.delivery agent, no
// kubeconfig) and issue its bootstrap token, shown once in a dialog with
// the `eco agent manifest` command that installs the agent (docs/agent.md).
// The token is never put in a URL or kept anywhere.
import { h, send, enc, errorText, openDialog, when } from './lib.js';

// The dialog that shows a fresh token once.
function showToken(provider, cluster, boot) {
  const cmd = `eco agent manifest --hub ${boot.hub} --token ${boot.token} | kubectl apply -f -`;
  const { body, close } = openDialog(`Install the agent of ${provider}+${cluster}`, { id: 'agent-token' });
  const pre = h('pre', { class: 'command', id: 'agent-command', tabindex: '0' }, cmd);
  const copied = h('span', { class: 'muted', 'aria-live': 'polite' });
  body.append(
    h('p', {}, 'On a machine whose kubectl reaches the cluster, run:'), pre,
    h('p', { class: 'muted' }, `The bootstrap token is single use and expires ${boot.expires ? when(boot.expires) : 'in 24 h'}. ` +
      'It is shown this once: eco keeps only its hash. The agent exchanges it for the cluster\'s own credential on its first connection.'),
    h('div', { class: 'op-buttons' },
      h('button', { type: 'button', class: 'primary', onclick: async () => {
        try {
          await navigator.clipboard.writeText(cmd);
          copied.textContent = 'Copied.';
        } catch (e) {
          copied.textContent = 'Select the command and copy it.';
        }
      } }, 'Copy command'), copied,
      h('button', { type: 'button', id: 'agent-token-close', onclick: close }, 'Close')));
}

export async function issueToken(provider, cluster) {
  const boot = await send('POST', `/v2/cluster-providers/${enc(provider)}/clusters/${enc(cluster)}/agent-bootstrap`, {});
  showToken(provider, cluster, boot);
}

// "New token" of an existing agent cluster, confirmed first.
export function newTokenDialog(provider, cluster) {
  const { body, close } = openDialog(`New bootstrap token for ${provider}+${cluster}`, { id: 'agent-new-token' });
  const error = h('div', { class: 'op-error', role: 'alert', hidden: true });
  const go = h('button', { type: 'button', class: 'primary', id: 'op-confirm', onclick: async () => {
    go.disabled = true;
    try {
      const boot = await send('POST', `/v2/cluster-providers/${enc(provider)}/clusters/${enc(cluster)}/agent-bootstrap`, {});
      close();
      showToken(provider, cluster, boot);
    } catch (e) {
      error.hidden = false;
      error.textContent = errorText(e);
      go.disabled = false;
    }
  } }, 'Issue token');
  body.append(h('p', {}, 'A new single-use token lets an agent enrol this cluster (for instance after its identity Secret was deleted). ' +
    'Tokens issued earlier stay valid until they are used or expire.'), error,
  h('div', { class: 'op-buttons' }, go, h('button', { type: 'button', id: 'op-cancel', onclick: close }, 'Cancel')));
  go.focus();
}

// The registration form: provider, name, labels.
export function registerForm(providers, done) {
  const error = h('div', { class: 'op-error', role: 'alert', hidden: true });
  const provider = h('input', { id: 'reg-provider', name: 'provider', required: true, list: 'reg-providers', autocomplete: 'off' });
  const name = h('input', { id: 'reg-name', name: 'name', required: true, autocomplete: 'off' });
  const labels = h('input', { id: 'reg-labels', name: 'labels', placeholder: 'edge, east', autocomplete: 'off' });
  const form = h('form', { class: 'register', id: 'register-agent' },
    h('h2', {}, 'Register an agent cluster'),
    h('p', { class: 'muted' }, 'An agent cluster has no kubeconfig on the hub: an eco agent inside it dials eco. ' +
      'Registering it issues a bootstrap token for the agent.'),
    h('datalist', { id: 'reg-providers' }, providers.map((p) => h('option', { value: p }))),
    h('label', {}, 'Provider ', provider), h('label', {}, 'Name ', name), h('label', {}, 'Labels ', labels),
    h('button', { type: 'submit', class: 'primary' }, 'Register'), error);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.hidden = true;
    const p = provider.value.trim();
    const c = name.value.trim();
    const base = `/v2/cluster-providers/${enc(p)}/clusters`;
    try {
      await send('POST', base, { metadata: { name: c }, spec: { delivery: 'agent' } });
      for (const l of labels.value.split(',').map((x) => x.trim()).filter(Boolean)) {
        await send('POST', `${base}/${enc(c)}/labels`, { clusterLabel: l });
      }
      await issueToken(p, c);
      name.value = '';
      labels.value = '';
      if (done) done();
    } catch (e) {
      error.hidden = false;
      error.textContent = errorText(e);
    }
  });
  return form;
}
