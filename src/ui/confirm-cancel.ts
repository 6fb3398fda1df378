// The "Cancel the run?" question of the pages that start runs (the #confirm-cancel dialog, built
// here): a stray click on Cancel must not end a long run. Resolves true only for "Cancel the
// run"; "Keep running", Escape and any other close answer false.

import { byId, h, inBody } from './dom.js';

/** The #confirm-cancel dialog, built here once for every page that starts runs. */
function confirmDialog(): HTMLDialogElement {
  return inBody('confirm-cancel', () =>
    h(
      'dialog',
      { id: 'confirm-cancel', 'aria-labelledby': 'confirm-title' },
      h('h2', { id: 'confirm-title' }, 'Cancel the run?'),
      h('p', {}, 'The current phase stops, the report is still written, and the run ends as ', h('code', {}, 'cancelled'), '.'),
      h('div', { class: 'buttons' }, h('button', { type: 'button', id: 'confirm-yes', class: 'danger' }, 'Cancel the run'), h('button', { type: 'button', id: 'confirm-no', autofocus: true }, 'Keep running')),
    ),
  );
}

if (typeof document !== 'undefined') confirmDialog();

export function askCancel(): Promise<boolean> {
  const dialog = confirmDialog();
  const yes = byId<HTMLButtonElement>('confirm-yes');
  const no = byId<HTMLButtonElement>('confirm-no');
  return new Promise((resolve) => {
    let answer = false;
    const onYes = () => {
      answer = true;
      dialog.close();
    };
    const onNo = () => dialog.close();
    const onClose = () => {
      yes.removeEventListener('click', onYes);
      no.removeEventListener('click', onNo);
      dialog.removeEventListener('close', onClose);
      resolve(answer);
    };
    yes.addEventListener('click', onYes);
    no.addEventListener('click', onNo);
    dialog.addEventListener('close', onClose);
    dialog.showModal();
  });
}
