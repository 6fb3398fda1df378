// The folder browser's one-line summary of a listing (pure, so the model tests pin it). For an
// input folder it also counts the FITS files: a folder that holds none (the session folder
// above lights/, a folder of JPEGs) says so before a run is started on it and fails its scan.

export interface ListingCounts {
  dirs: number;
  /** Files shown (in file mode: those matching the filter). */
  files: number;
  /** Files the filter hid (file mode). */
  hidden: number;
  mode: 'dir' | 'file';
  /** FITS files among `files`, when the folder is chosen as an input of frames; absent otherwise. */
  fits?: number;
}

const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

export function listingSummary(c: ListingCounts): string {
  const files = c.mode === 'file' ? count(c.files, 'matching file', 'matching files') : count(c.files, 'file', 'files');
  let text = `${count(c.dirs, 'folder', 'folders')}, ${files}${c.hidden > 0 ? ` (${count(c.hidden, 'other file', 'other files')} hidden)` : ''}`;
  if (c.fits === undefined) return text;
  if (c.fits > 0) return `${text}, ${c.fits} of them FITS`;
  text += '. No FITS files here';
  return c.dirs > 0 ? `${text}: open the subfolder that holds the frames.` : `${text}.`;
}
