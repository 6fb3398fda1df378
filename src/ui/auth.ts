// Signing the browser in to a server that requires a token (the server's routes/auth.ts): the
// token is exchanged once for an HttpOnly session cookie, which then rides along with every
// request, EventSource stream, image tile and download link of the page, so no URL carries it.
// Two ways in: `#token=…` in the page's address (what `skystack serve` prints; the fragment never
// reaches the server and is removed from the address bar at once), or a dialog shown the first
// time the server answers 401. Signing in reloads the page, so every view starts over with access.
// Outside a browser (Node tests importing api.ts) nothing here runs.

import { h } from './dom.js';

const SESSION_URL = '/api/auth/session';

async function postToken(token: string): Promise<boolean> {
  const res = await fetch(SESSION_URL, { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify({ token }) });
  return res.ok;
}

/** `#token=…` of an address (with other fragment parameters kept), or null. */
export function fragmentToken(hash: string): { token: string; rest: string } | null {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const token = params.get('token');
  if (!token) return null;
  params.delete('token');
  const rest = params.toString();
  return { token, rest: rest ? `#${rest}` : '' };
}

let signedIn: Promise<void> | null = null;

/** Resolves once a token in the address (if any) has been exchanged; every API call waits for it. */
export function sessionReady(): Promise<void> {
  if (signedIn) return signedIn;
  signedIn = (async () => {
    if (typeof location === 'undefined' || typeof history === 'undefined') return;
    const found = fragmentToken(location.hash);
    if (!found) return;
    history.replaceState(history.state, '', `${location.pathname}${location.search}${found.rest}`);
    try {
      if (!(await postToken(found.token))) askForToken('The token in the address was not accepted.');
    } catch {
      // the server did not answer: the page's own requests will say so
    }
  })();
  return signedIn;
}

let asked = false;

/** Shows the sign-in dialog (once per page); called when the server answers 401 UNAUTHORIZED. */
export function askForToken(why = 'This server needs its access token (printed by `skystack serve`, or its --token / SKYSTACK_TOKEN).'): void {
  if (asked || typeof document === 'undefined') return;
  asked = true;
  const input = h('input', { type: 'password', id: 'sign-in-token', autocomplete: 'current-password', required: true, 'aria-label': 'access token' });
  const status = h('p', { class: 'status', role: 'status' });
  const form = h('form', { method: 'dialog' }, h('h2', { id: 'sign-in-title' }, 'Sign in'), h('p', {}, why), h('label', {}, 'Token ', input), h('p', {}, h('button', { type: 'submit' }, 'Sign in')), status);
  const dialog = h('dialog', { id: 'sign-in', 'aria-labelledby': 'sign-in-title' }, form);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    status.textContent = 'Checking…';
    postToken(input.value.trim()).then(
      (ok) => {
        if (ok) location.reload();
        else status.textContent = 'Not accepted: check the token and try again.';
      },
      () => {
        status.textContent = 'The server did not answer.';
      },
    );
  });
  document.body.append(dialog);
  dialog.showModal();
  input.focus();
}
