// Key completion for the YAML editor, driven by the JSON Schema of GET /api/config/schema.
// yamlKeyContext finds the block the cursor is in (the path of parent keys, from indentation),
// the partial key typed so far and the keys already written in that block; schemaChildren lists
// the valid child keys of a path with their description, type and default; applyCompletion
// writes the chosen key (a block key opens an indented line below). These three are DOM-free
// (unit-tested from Node). YamlCompleter is the dropdown: Ctrl-Space opens it, typing filters it,
// ↑/↓ move, Enter or Tab insert, Esc closes. Only block-style mappings are understood (what the
// tiled YAML uses); inside a list, a flow mapping or a value there is nothing to complete.

import { clear, h } from './dom.js';

export interface KeyContext {
  /** Parent keys from the root to the block the cursor is in. */
  path: string[];
  /** The key typed so far on the cursor's line. */
  prefix: string;
  /** Offsets of `prefix` in the text (what a completion replaces). */
  from: number;
  to: number;
  /** Indentation (spaces) of the cursor's line. */
  indent: number;
  /** Keys already written in the same block (not offered again). */
  siblings: string[];
}

const KEY_LINE = /^( *)([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(.*)$/;
const OPENS_BLOCK = /^\s*(#.*)?$/;

/** The key context at `offset`, or null where no key can be typed (a value, a list item, a comment). */
export function yamlKeyContext(text: string, offset: number): KeyContext | null {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  const before = text.slice(lineStart, offset);
  const m = /^( *)([A-Za-z0-9_]*)$/.exec(before);
  if (!m) return null;
  const indent = m[1]!.length;
  const prefix = m[2]!;
  let lineEnd = text.indexOf('\n', offset);
  if (lineEnd < 0) lineEnd = text.length;
  // The rest of the word after the cursor is replaced too.
  const after = /^[A-Za-z0-9_]*/.exec(text.slice(offset, lineEnd))![0];
  const lines = text.split('\n');
  const row = text.slice(0, lineStart).split('\n').length - 1;
  // Parents: walk up; every line less indented than the current level must open a block.
  const path: string[] = [];
  let level = indent;
  let parentRow = -1;
  for (let i = row - 1; i >= 0 && level > 0; i--) {
    const l = lines[i]!;
    if (l.trim() === '' || l.trimStart().startsWith('#')) continue;
    const ind = l.length - l.trimStart().length;
    if (ind >= level) continue;
    const k = KEY_LINE.exec(l);
    if (!k || !OPENS_BLOCK.test(k[3]!)) return null;
    path.unshift(k[2]!);
    if (parentRow < 0) parentRow = i;
    level = ind;
  }
  if (level > 0) return null; // indented without a parent
  // Siblings: keys at the same indent from the parent's line to the block's end.
  const siblings: string[] = [];
  for (let i = parentRow + 1; i < lines.length; i++) {
    if (i === row) continue;
    const l = lines[i]!;
    if (l.trim() === '' || l.trimStart().startsWith('#')) continue;
    const ind = l.length - l.trimStart().length;
    if (ind < indent) break;
    const k = KEY_LINE.exec(l);
    if (k && ind === indent) siblings.push(k[2]!);
  }
  return { path, prefix, from: offset - prefix.length, to: offset + after.length, indent, siblings };
}

export interface SchemaKey {
  key: string;
  description: string;
  /** The value's type as the schema says (object, number, enum values…). */
  type: string;
  default: unknown;
  /** A key whose value is a block (an object): completion opens it. */
  block: boolean;
}

type Schema = { type?: unknown; properties?: Record<string, Schema>; description?: unknown; default?: unknown; enum?: unknown[]; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[] };

/** The object schema of `node` (looking into anyOf/oneOf/allOf for one with properties). */
function objectOf(node: Schema | undefined): Schema | undefined {
  if (!node) return undefined;
  if (node.properties) return node;
  for (const alt of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])]) {
    const o = objectOf(alt);
    if (o) return o;
  }
  return undefined;
}

function typeText(s: Schema): string {
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (typeof s.type === 'string') return s.type;
  if (Array.isArray(s.type)) return s.type.join(' | ');
  const alts = [...(s.anyOf ?? []), ...(s.oneOf ?? [])];
  if (alts.length) return alts.map(typeText).join(' | ');
  return 'any';
}

/** Valid child keys of `path` in schema order, starting with `prefix`, leaving out `exclude`. */
export function schemaChildren(schema: unknown, path: readonly string[], prefix = '', exclude: readonly string[] = []): SchemaKey[] {
  let node = objectOf(schema as Schema);
  for (const k of path) node = objectOf(node?.properties?.[k]);
  if (!node?.properties) return [];
  const out: SchemaKey[] = [];
  for (const [key, s] of Object.entries(node.properties)) {
    if (!key.startsWith(prefix) || exclude.includes(key)) continue;
    const block = objectOf(s) !== undefined;
    out.push({ key, description: typeof s.description === 'string' ? s.description : '', type: block ? 'block' : typeText(s), default: s.default, block });
  }
  return out;
}

/** The text with `choice` written at `ctx`, and the cursor after it. */
export function applyCompletion(text: string, ctx: KeyContext, choice: SchemaKey): { text: string; cursor: number } {
  const rest = text.slice(ctx.to);
  const hasColon = /^\s*:/.test(rest);
  const insert = hasColon ? choice.key : choice.block ? `${choice.key}:\n${' '.repeat(ctx.indent + 2)}` : `${choice.key}: `;
  return { text: text.slice(0, ctx.from) + insert + rest, cursor: ctx.from + insert.length };
}

/** The completion dropdown of one textarea. */
export class YamlCompleter {
  private readonly list: HTMLUListElement;
  private items: SchemaKey[] = [];
  private active = 0;
  private ctx: KeyContext | null = null;
  private schema: unknown = null;

  constructor(
    private readonly area: HTMLTextAreaElement,
    loadSchema: () => Promise<unknown>,
    private readonly onApplied: () => void = () => {},
  ) {
    this.list = h('ul', { class: 'completions', role: 'listbox', id: `${area.id}-completions`, 'aria-label': 'Valid keys here', hidden: true });
    // Beside the editor box (which clips its overflow), in a container the list is placed in.
    const box = area.parentElement!;
    box.after(this.list);
    box.parentElement!.classList.add('has-completions');
    area.setAttribute('aria-autocomplete', 'list');
    area.setAttribute('aria-controls', this.list.id);
    void loadSchema().then(
      (s) => (this.schema = s),
      () => (this.schema = null),
    );
    area.addEventListener('keydown', (e) => this.onKey(e));
    area.addEventListener('input', () => {
      if (!this.list.hidden) this.open(false);
    });
    area.addEventListener('blur', () => setTimeout(() => this.close(), 150));
  }

  get isOpen(): boolean {
    return !this.list.hidden;
  }

  private onKey(e: KeyboardEvent): void {
    if (e.ctrlKey && (e.key === ' ' || e.code === 'Space')) {
      e.preventDefault();
      this.open(true);
      return;
    }
    if (this.list.hidden) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      this.active = (this.active + (e.key === 'ArrowDown' ? 1 : this.items.length - 1)) % this.items.length;
      this.draw();
    } else if (e.key === 'Enter' || e.key === 'Tab') {
      e.preventDefault();
      this.accept(this.active);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      this.close();
    }
  }

  /** Opens (or refreshes) the list at the cursor; `explicit`: say so when nothing fits. */
  open(explicit: boolean): void {
    const ctx = yamlKeyContext(this.area.value, this.area.selectionStart);
    const items = ctx && this.schema ? schemaChildren(this.schema, ctx.path, ctx.prefix, ctx.siblings) : [];
    this.ctx = ctx;
    this.items = items;
    this.active = 0;
    if (items.length === 0) {
      if (explicit) this.showNote(!this.schema ? 'the schema is not loaded' : ctx ? `no ${ctx.prefix ? `key starting "${ctx.prefix}" ` : 'more keys '}under ${ctx.path.join('.') || 'the root'}` : 'no key can go here');
      else this.close();
      return;
    }
    this.draw();
  }

  private showNote(text: string): void {
    clear(this.list);
    this.list.append(h('li', { class: 'muted', role: 'option', 'aria-disabled': 'true' }, text));
    this.list.hidden = false;
    this.place();
    setTimeout(() => {
      if (this.items.length === 0) this.close();
    }, 1500);
  }

  private draw(): void {
    clear(this.list);
    this.items.forEach((k, i) => {
      const def = k.block || k.default === undefined ? '' : ` = ${JSON.stringify(k.default)}`;
      const li = h(
        'li',
        { role: 'option', id: `${this.list.id}-${i}`, 'aria-selected': String(i === this.active), 'data-key': k.key, title: k.description || k.key },
        h('code', {}, k.key),
        h('span', { class: 'muted' }, ` ${k.type}${def}`),
        k.description ? h('span', { class: 'completion-doc' }, k.description) : null,
      );
      li.addEventListener('mousedown', (e) => {
        e.preventDefault();
        this.accept(i);
      });
      this.list.append(li);
    });
    this.area.setAttribute('aria-activedescendant', `${this.list.id}-${this.active}`);
    this.list.hidden = false;
    this.place();
    this.list.children[this.active]?.scrollIntoView({ block: 'nearest' });
  }

  /**
   * Below the cursor's line (the editor's font is monospaced, its line height fixed). Measured
   * against where top/left 0 land, so the container's own geometry (a fieldset's legend) cannot
   * shift it. The list must be shown when this runs.
   */
  private place(): void {
    const style = getComputedStyle(this.area);
    const lineHeight = parseFloat(style.lineHeight) || 18;
    const row = this.area.value.slice(0, this.area.selectionStart).split('\n').length;
    this.list.style.top = '0px';
    this.list.style.left = '0px';
    const zero = this.list.getBoundingClientRect();
    const a = this.area.getBoundingClientRect();
    const inArea = Math.min(parseFloat(style.paddingTop) + row * lineHeight - this.area.scrollTop, this.area.clientHeight);
    const x = a.left + parseFloat(style.paddingLeft) + (this.ctx?.indent ?? 0) * parseFloat(style.fontSize) * 0.6 - this.area.scrollLeft;
    this.list.style.top = `${a.top + Math.max(lineHeight, inArea) - zero.top}px`;
    this.list.style.left = `${Math.max(a.left, x) - zero.left}px`;
  }

  private accept(i: number): void {
    const choice = this.items[i];
    if (!choice || !this.ctx) return this.close();
    const r = applyCompletion(this.area.value, this.ctx, choice);
    this.area.value = r.text;
    this.area.setSelectionRange(r.cursor, r.cursor);
    this.close();
    this.area.focus();
    this.onApplied();
  }

  close(): void {
    this.list.hidden = true;
    this.items = [];
    this.area.removeAttribute('aria-activedescendant');
  }
}
