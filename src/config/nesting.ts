// Nesting depth of JSON and YAML texts, measured on the text before any parser sees it. Deep
// nesting costs a recursive parser or merge its stack (a RangeError, or worse, a process abort
// inside the YAML parser's error path), so requests are refused by depth first. The JSON count
// is exact; the YAML count is an upper bound taken line by line (block indentation levels,
// compact `- `/`? ` entries, flow brackets), which is all a limit needs: real configurations
// nest a handful of levels, far below MAX_NESTING. Both scans are linear and stop at the limit.

/** Deepest nesting accepted in a request body (JSON) or a configuration text (YAML). */
export const MAX_NESTING = 64;

/** Deepest `[`/`{` nesting of a JSON text (strings skipped); counting stops past `limit`. */
export function jsonDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 0x5d || c === 0x7d) depth = Math.max(0, depth - 1);
  }
  return max;
}

const BLOCK_SCALAR_HEADER = /(?:^|[\s:-])[|>][-+0-9]*\s*(?:#.*)?$/;

/** A mapping key starts the line's content: `key:`, `"key":`, `key: value`. */
const KEY_START = /^(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"\[{][^#]*?)\s*:(?:\s|$)/;

/** An upper bound of the nesting depth of a YAML text; counting stops past `limit`. */
export function yamlDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  let max = 0;
  // open block collections: the column of their entries, and whether they are sequences
  const open: { col: number; seq: boolean }[] = [];
  const place = (col: number, seq: boolean) => {
    for (;;) {
      const top = open[open.length - 1];
      // a sequence may sit at its parent key's column (`a:\n- 1`): it nests, it is no sibling
      if (!top || top.col < col || (top.col === col && seq && !top.seq)) break;
      open.pop();
    }
    open.push({ col, seq });
  };
  let flow = 0;
  let flowBase = 0;
  let scalarParent = -1; // indentation of the line that opened a block scalar, -1 when none
  for (const line of text.split(/\r?\n/)) {
    const indent = line.length - line.replace(/^ +/, '').length;
    const content = line.slice(indent);
    if (scalarParent >= 0) {
      if (content === '' || content.startsWith('\t') || indent > scalarParent) continue; // block scalar text
      scalarParent = -1;
    }
    let pos = 0;
    let lineDepth = 0;
    if (flow === 0) {
      if (content === '' || content.startsWith('#')) continue;
      if (/^(---|\.\.\.)(\s|$)/.test(content)) {
        open.length = 0;
        continue;
      }
      // `- - key: x` holds three levels on one line: each indicator, then the key's mapping
      for (let m = /^[-?](?: +|$)/.exec(content); m; m = /^[-?](?: +|$)/.exec(content.slice(pos))) {
        place(indent + pos, true);
        pos += m[0].length;
      }
      const rest = content.slice(pos);
      if (pos === 0 || KEY_START.test(rest)) place(indent + pos, false);
      lineDepth = open.length;
      if (lineDepth > max) max = lineDepth;
      if (max > limit) return max;
    }
    // flow collections (and their depth) on the rest of the line
    // A quote or bracket opens a node only where a node can start: at the start of the content
    // or after `[`, `{`, `,` or `:`; inside a plain scalar (`it's`, `light_[1].fits`) it is text.
    let quote: string | null = null;
    let last = ''; // last character outside quotes that was not a space ('' = node start)
    for (let i = pos; i < content.length; i++) {
      const ch = content[i]!;
      if (quote) {
        if (quote === '"' && ch === '\\') i++;
        else if (ch === quote) {
          if (quote === "'" && content[i + 1] === "'") i++;
          else {
            quote = null;
            last = ch;
          }
        }
        continue;
      }
      if (ch === ' ' || ch === '\t') continue;
      const nodeStart = last === '' || last === '[' || last === '{' || last === ',' || last === ':';
      if (ch === '#' && (i === pos || /\s/.test(content[i - 1]!))) break;
      if ((ch === '"' || ch === "'") && nodeStart) quote = ch;
      else if ((ch === '[' || ch === '{') && (flow > 0 || nodeStart)) {
        if (flow === 0) flowBase = lineDepth;
        flow++;
        if (flowBase + flow > max) max = flowBase + flow;
        if (max > limit) return max;
      } else if ((ch === ']' || ch === '}') && flow > 0) flow--;
      last = ch;
    }
    if (flow === 0 && BLOCK_SCALAR_HEADER.test(content)) scalarParent = indent;
  }
  return max;
}
