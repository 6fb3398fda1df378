// Server-side folder (or file) browser in a modal <dialog>: lists a directory through
// GET /api/files/list, walks up and down, and when the server refuses a path as outside the
// allowed roots (403 PATH_NOT_ALLOWED) offers "Grant access" (GET /api/files/grant) and retries.
// Resolves with the chosen absolute path, or null when cancelled. Keyboard: the dialog is modal,
// entries are buttons, Escape cancels.

import { api, ApiError, errText, type DirListing } from './api.js';
import { byId, clear, formatBytes, h, inBody, say } from './dom.js';
import { listingSummary } from './listing-summary.js';

export interface BrowseOptions {
  start: string;
  /** 'dir' picks a folder; 'file' picks a file (folders still navigate). */
  mode: 'dir' | 'file';
  title: string;
  /** Files to show in file mode (e.g. /\.(fits?|fts)$/i, /\.ya?ml$/i). */
  fileFilter?: RegExp;
  /** In dir mode, for a folder of frames: which files are frames (the summary counts them). */
  frames?: (name: string) => boolean;
}

/**
 * The page's folder dialog (#browser), built here once, so every page that offers Browse… has it
 * (a page without its markup once threw on the first click).
 */
function browserDialog(): HTMLDialogElement {
  return inBody('browser', () =>
    h(
      'dialog',
      { id: 'browser', 'aria-labelledby': 'browser-title' },
      h('h2', { id: 'browser-title' }, 'Choose a folder'),
      h(
        'div',
        { class: 'with-button' },
        h('label', { for: 'browser-path', class: 'sr-only' }, 'Path'),
        h('input', { id: 'browser-path', type: 'text', spellcheck: 'false' }),
        h('button', { type: 'button', id: 'browser-go' }, 'Go'),
        h('button', { type: 'button', id: 'browser-up', 'aria-label': 'Parent folder' }, 'Up'),
      ),
      h('p', { id: 'browser-status', class: 'status', role: 'status', 'aria-live': 'polite' }),
      h('ul', { id: 'browser-list', class: 'browser-list', 'aria-label': 'Folder contents' }),
      h(
        'div',
        { class: 'buttons' },
        h('button', { type: 'button', id: 'browser-grant', hidden: true }, 'Grant access'),
        h('button', { type: 'button', id: 'browser-choose', class: 'primary' }, 'Choose this folder'),
        h('button', { type: 'button', id: 'browser-cancel' }, 'Cancel'),
      ),
    ),
  );
}

// In the page from the start (its controls are part of the page, e.g. for the label checks).
if (typeof document !== 'undefined') browserDialog();

export function browse(opts: BrowseOptions): Promise<string | null> {
  const dialog = browserDialog();
  const title = byId('browser-title');
  const pathInput = byId<HTMLInputElement>('browser-path');
  const list = byId<HTMLUListElement>('browser-list');
  const status = byId('browser-status');
  const grantBtn = byId<HTMLButtonElement>('browser-grant');
  const chooseBtn = byId<HTMLButtonElement>('browser-choose');
  const upBtn = byId<HTMLButtonElement>('browser-up');
  const goBtn = byId<HTMLButtonElement>('browser-go');
  const cancelBtn = byId<HTMLButtonElement>('browser-cancel');
  title.textContent = opts.title;
  chooseBtn.textContent = opts.mode === 'dir' ? 'Choose this folder' : 'Choose selected file';
  let current: DirListing | null = null;
  let selectedFile: string | null = null;
  // Only the latest listing may draw: a slow earlier one must not overwrite a newer path.
  let generation = 0;
  // Set when the user types a path while a listing loads: the listing must not overwrite it.
  let typed = false;

  return new Promise((resolve) => {
    const load = async (path: string): Promise<void> => {
      const mine = ++generation;
      typed = false;
      grantBtn.hidden = true;
      selectedFile = null;
      chooseBtn.disabled = opts.mode === 'file';
      say(status, `Listing ${path}…`);
      let listing: DirListing;
      try {
        listing = await api.listDir(path);
      } catch (e) {
        if (mine !== generation) return;
        current = null;
        clear(list);
        if (!typed) pathInput.value = path;
        upBtn.disabled = true;
        chooseBtn.disabled = true;
        if (e instanceof ApiError && (e.code === 'PATH_NOT_ALLOWED' || e.status === 403)) {
          grantBtn.hidden = false;
          say(status, `${path} is outside the allowed folders. Grant access to list it.`, 'error');
        } else say(status, errText(e), 'error');
        return;
      }
      if (mine !== generation) return;
      current = listing;
      if (!typed) pathInput.value = current.path;
      upBtn.disabled = current.parent === null;
      // The list of roots is not a folder one can choose.
      chooseBtn.disabled = opts.mode === 'file' || current.path === '';
      clear(list);
      const dirs = current.entries.filter((e) => e.type === 'dir').sort((a, b) => a.name.localeCompare(b.name));
      const files = current.entries.filter((e) => e.type === 'file' && (!opts.fileFilter || opts.fileFilter.test(e.name))).sort((a, b) => a.name.localeCompare(b.name));
      for (const d of dirs) list.append(h('li', {}, h('button', { type: 'button', class: 'entry entry-dir', 'data-name': d.name, onclick: () => void load(d.path) }, `📁 ${d.name}/`)));
      for (const f of files) {
        const btn = h('button', { type: 'button', class: 'entry entry-file', 'data-name': f.name, disabled: opts.mode === 'dir' }, `${f.name}`, h('span', { class: 'muted' }, ` ${formatBytes(f.size)}`));
        btn.addEventListener('click', () => {
          selectedFile = f.path;
          for (const b of list.querySelectorAll('.entry-file')) b.setAttribute('aria-pressed', 'false');
          btn.setAttribute('aria-pressed', 'true');
          chooseBtn.disabled = false;
        });
        btn.addEventListener('dblclick', () => done(f.path));
        list.append(h('li', {}, btn));
      }
      const hidden = current.entries.length - dirs.length - files.length;
      if (current.path === '') {
        say(status, `${dirs.length} allowed folders. Type another path and Go, then Grant access, to add one.`);
        return;
      }
      const fits = opts.mode === 'dir' && opts.frames ? files.filter((f) => opts.frames!(f.name)).length : undefined;
      say(status, listingSummary({ dirs: dirs.length, files: files.length, hidden, mode: opts.mode, ...(fits !== undefined ? { fits } : {}) }));
    };

    const done = (value: string | null): void => {
      cleanup();
      dialog.close();
      resolve(value);
    };
    const onUp = () => {
      if (current && current.parent !== null) void load(current.parent);
    };
    const onGo = () => void load(pathInput.value.trim());
    const onInput = () => {
      typed = true;
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        onGo();
      }
    };
    const onGrant = async () => {
      const path = pathInput.value.trim();
      try {
        await api.grant(path);
        say(status, `Access granted to ${path}`, 'ok');
        await load(path);
      } catch (e) {
        say(status, errText(e), 'error');
      }
    };
    const onChoose = () => done(opts.mode === 'dir' ? (current?.path ?? pathInput.value.trim()) : selectedFile);
    const onCancel = () => done(null);
    const onClose = () => {
      cleanup();
      resolve(null);
    };
    const cleanup = () => {
      upBtn.removeEventListener('click', onUp);
      goBtn.removeEventListener('click', onGo);
      pathInput.removeEventListener('keydown', onKey);
      pathInput.removeEventListener('input', onInput);
      grantBtn.removeEventListener('click', onGrant);
      chooseBtn.removeEventListener('click', onChoose);
      cancelBtn.removeEventListener('click', onCancel);
      dialog.removeEventListener('close', onClose);
    };
    upBtn.addEventListener('click', onUp);
    goBtn.addEventListener('click', onGo);
    pathInput.addEventListener('keydown', onKey);
    pathInput.addEventListener('input', onInput);
    grantBtn.addEventListener('click', onGrant);
    chooseBtn.addEventListener('click', onChoose);
    cancelBtn.addEventListener('click', onCancel);
    dialog.addEventListener('close', onClose);
    dialog.showModal();
    void load(opts.start);
  });
}
