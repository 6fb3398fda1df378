// The parameters editor: a JSON text area with a line-number gutter, and validation issues shown
// at their key — the gutter marks the line where the key is written, and each issue in the list
// names the key and its line and jumps there. Key lines come from a small JSON scanner that
// tracks the path of every key, so issues land on the right line however the text is formatted.

import type { ApiIssue } from './api.js';
import { clear, h } from './dom.js';
import type { Json } from './config-paths.js';

/** Line (1-based) of every key path written in `text` ("a.b.0.c" for arrays). Tolerates bad JSON. */
export function keyLines(text: string): Map<string, number> {
  const out = new Map<string, number>();
  type Frame = { kind: 'obj' | 'arr'; path: string; index: number; key: string | null };
  const stack: Frame[] = [];
  let line = 1;
  const childPath = (fr: Frame | undefined, key: string): string => (fr && fr.path ? `${fr.path}.${key}` : key);
  // Path of the value about to start in the current container.
  const valuePath = (): string | null => {
    const top = stack[stack.length - 1];
    if (!top) return '';
    if (top.kind === 'arr') return childPath(top, String(top.index));
    return top.key === null ? null : childPath(top, top.key);
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\n') line++;
    else if (c === '"') {
      let j = i + 1;
      let s = '';
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\') {
          s += text[j + 1] ?? '';
          j++;
        } else if (text[j] === '\n') break;
        else s += text[j];
      }
      const top = stack[stack.length - 1];
      let k = j + 1;
      while (k < text.length && /[ \t\r]/.test(text[k]!)) k++;
      if (top?.kind === 'obj' && text[k] === ':') {
        top.key = s;
        out.set(childPath(top, s), line);
      }
      i = j;
    } else if (c === '{' || c === '[') {
      const path = valuePath() ?? '';
      stack.push({ kind: c === '{' ? 'obj' : 'arr', path, index: 0, key: null });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.kind === 'arr') top.index++;
      else if (top) top.key = null;
    }
  }
  return out;
}

/** The line of `path`, or of its nearest written parent (a missing key is reported at its object). */
function lineOf(lines: Map<string, number>, path: string): number | null {
  let p = path;
  while (p) {
    const l = lines.get(p);
    if (l !== undefined) return l;
    const cut = p.lastIndexOf('.');
    p = cut < 0 ? '' : p.slice(0, cut);
  }
  return null;
}

/** Line and column of a JSON.parse failure, when the engine's message gives a position. */
function parseErrorLine(text: string, message: string): number | null {
  const pos = /position (\d+)/.exec(message)?.[1];
  if (pos !== undefined) return text.slice(0, Number(pos)).split('\n').length;
  const ln = /line (\d+)/.exec(message)?.[1];
  return ln !== undefined ? Number(ln) : null;
}

export class ParamEditor {
  private issues: { issue: ApiIssue; line: number | null }[] = [];

  constructor(
    private readonly area: HTMLTextAreaElement,
    private readonly gutter: HTMLElement,
    private readonly issueList: HTMLElement,
  ) {
    area.addEventListener('input', () => this.renderGutter());
    area.addEventListener('scroll', () => {
      gutter.scrollTop = area.scrollTop;
    });
    this.renderGutter();
  }

  setConfig(config: Json): void {
    this.area.value = JSON.stringify(config, null, 2);
    this.setIssues([]);
  }

  /** The editor's JSON; a syntax error is shown at its line and thrown. */
  getConfig(): Json {
    const text = this.area.value.trim() === '' ? '{}' : this.area.value;
    try {
      const v = JSON.parse(text) as unknown;
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SyntaxError('the parameters must be one JSON object');
      return v as Json;
    } catch (e) {
      const message = (e as Error).message;
      this.setIssues([{ path: '', code: 'json_syntax', message: `JSON syntax: ${message}` }], parseErrorLine(text, message));
      throw e;
    }
  }

  /** Shows `issues` at their keys (or at `forcedLine` for a syntax error). */
  setIssues(issues: ApiIssue[], forcedLine: number | null = null): void {
    const lines = keyLines(this.area.value);
    this.issues = issues.map((issue) => ({ issue, line: forcedLine ?? lineOf(lines, issue.path) }));
    clear(this.issueList);
    for (const { issue, line } of this.issues) {
      const key = issue.path || '(root)';
      this.issueList.append(
        h(
          'li',
          { class: 'issue', 'data-key': issue.path, 'data-line': line ?? '' },
          h('button', { type: 'button', class: 'linklike', onclick: () => this.jumpTo(line) }, h('code', {}, key), line !== null ? ` (line ${line})` : ''),
          `: ${issue.message}`,
        ),
      );
    }
    this.issueList.hidden = this.issues.length === 0;
    this.renderGutter();
    // Bring the first marked key into view (without taking the focus from the button pressed).
    const first = this.issues.find((i) => i.line !== null)?.line;
    if (first !== undefined && first !== null) this.scrollToLine(first);
  }

  private scrollToLine(line: number): void {
    const rows = this.area.value.split('\n').length;
    const lineHeight = this.area.scrollHeight / Math.max(1, rows);
    this.area.scrollTop = Math.max(0, (line - 3) * lineHeight);
    this.gutter.scrollTop = this.area.scrollTop;
  }

  private jumpTo(line: number | null): void {
    if (line === null) return;
    const rows = this.area.value.split('\n');
    const start = rows.slice(0, line - 1).reduce((n, r) => n + r.length + 1, 0);
    this.area.focus();
    this.area.setSelectionRange(start, start + (rows[line - 1]?.length ?? 0));
    this.scrollToLine(line);
  }

  private renderGutter(): void {
    renderLineGutter(this.gutter, this.area, this.issues.flatMap(({ issue, line }) => (line !== null ? [{ line, text: `${issue.path || '(root)'}: ${issue.message}` }] : [])));
  }
}

/**
 * Line numbers beside `area` in `gutter`, the lines in `marks` flagged (● n, the messages as the
 * title); the gutter keeps the text's scroll position. Shared by the JSON and YAML editors.
 */
export function renderLineGutter(gutter: HTMLElement, area: HTMLTextAreaElement, marks: readonly { line: number; text: string }[]): void {
  const count = area.value.split('\n').length;
  const marked = new Map<number, string[]>();
  for (const m of marks) marked.set(m.line, [...(marked.get(m.line) ?? []), m.text]);
  clear(gutter);
  for (let n = 1; n <= count; n++) {
    const msgs = marked.get(n);
    gutter.append(h('div', msgs ? { class: 'gutter-error', title: msgs.join('\n'), 'data-line': n } : {}, msgs ? `● ${n}` : String(n)));
  }
  gutter.scrollTop = area.scrollTop;
}
