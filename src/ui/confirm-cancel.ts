// The "Cancel the run?" question of the pages that start runs (the #confirm-cancel dialog): a
// stray click on Cancel must not end a long run. Resolves true only for "Cancel the run"; "Keep
// running", Escape and any other close answer false.

import { byId } from './dom.js';

export function askCancel(): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>('confirm-cancel');
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
