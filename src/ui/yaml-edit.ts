// Small edits of block-style YAML text in the browser (the page has no YAML library): set the
// scalar at a key path, keeping every other line, comment and the key order as written. A key
// that exists gets its value replaced on its line (a trailing comment kept); a missing key is
// inserted under its deepest existing parent (missing parents created), at the parent's child
// indentation. Used to apply suggestions to the studio's editor. DOM-free.

const KEY_LINE = /^( *)([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(.*)$/;

/** A scalar as YAML: plain where that reads back as the same value, JSON-quoted otherwise. */
export function yamlScalar(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  const s = String(v);
  return /^[A-Za-z_][A-Za-z0-9_.\-/]*$/.test(s) && !/^(true|false|null|yes|no|on|off|~)$/i.test(s) ? s : JSON.stringify(s);
}

/** `text` with `path` set to `value`. */
export function yamlSetPath(text: string, path: readonly string[], value: unknown): string {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  let lo = 0; // first line of the current block
  let hi = lines.length; // end of it
  let indent = 0; // indentation of the current block's keys
  for (let depth = 0; depth < path.length; depth++) {
    const key = path[depth]!;
    const last = depth === path.length - 1;
    // The block's key indentation is that of its first key line (its parent's + 2 when empty).
    for (let i = lo; i < hi; i++) {
      const l = lines[i]!;
      if (l.trim() === '' || l.trimStart().startsWith('#')) continue;
      indent = l.length - l.trimStart().length;
      break;
    }
    let found = -1;
    for (let i = lo; i < hi; i++) {
      const m = KEY_LINE.exec(lines[i]!);
      if (m && m[1]!.length === indent && m[2] === key) {
        found = i;
        break;
      }
    }
    if (found < 0) {
      // Insert the rest of the path at the block's end (before trailing blank lines).
      let at = hi;
      while (at > lo && lines[at - 1]!.trim() === '') at--;
      const add: string[] = [];
      path.slice(depth).forEach((k, j) => {
        const pad = ' '.repeat(indent + 2 * j);
        add.push(j === path.length - depth - 1 ? `${pad}${k}: ${yamlScalar(value)}` : `${pad}${k}:`);
      });
      lines.splice(at, 0, ...add);
      return lines.join('\n') + '\n';
    }
    if (last) {
      const m = KEY_LINE.exec(lines[found]!)!;
      const comment = /\s#.*$/.exec(m[3]!)?.[0] ?? '';
      lines[found] = `${m[1]}${key}: ${yamlScalar(value)}${comment}`;
      // A block that stood under the key is replaced by the scalar.
      let end = found + 1;
      while (end < hi && (lines[end]!.trim() === '' || lines[end]!.length - lines[end]!.trimStart().length > indent)) end++;
      while (end > found + 1 && lines[end - 1]!.trim() === '') end--;
      lines.splice(found + 1, end - found - 1);
      return lines.join('\n') + '\n';
    }
    // Descend: the block is the lines after `found` indented deeper than it.
    let end = found + 1;
    while (end < hi && (lines[end]!.trim() === '' || lines[end]!.length - lines[end]!.trimStart().length > indent)) end++;
    const parentIndent = indent;
    lo = found + 1;
    hi = end;
    indent = parentIndent + 2;
    // A key with an inline value (`key: 3`) becomes a block.
    const m = KEY_LINE.exec(lines[found]!)!;
    if (!/^\s*(#.*)?$/.test(m[3]!)) lines[found] = `${m[1]}${key}:`;
  }
  return lines.join('\n') + '\n';
}

/** `text` without the top-level block `key` (its line and every deeper-indented line after it). */
export function yamlDropBlock(text: string, key: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  let dropping = false;
  for (const l of lines) {
    const m = KEY_LINE.exec(l);
    if (m && m[1] === '') dropping = m[2] === key;
    else if (dropping && l.trim() !== '' && !/^\s/.test(l) && !l.startsWith('#')) dropping = false;
    if (!dropping) out.push(l);
  }
  return out.join('\n');
}
