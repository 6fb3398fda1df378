// An ordered FITS header: cards keep their order and (while unchanged) their exact bytes, so
// a header read and written again keeps everything the pipeline did not touch.
// Long strings arrive already joined from their CONTINUE cards.

import { BLOCK_LENGTH, CARD_LENGTH, type CardValue, type FitsCard, formatCard, parseCard } from './card.js';

export type HeaderParseResult = { header: FitsHeader; endFound: true } | { problem: string; cardIndex: number };

export interface SetOptions {
  comment?: string;
  /** Store a number as a real even when it is integral (EXPTIME = 120.0). */
  real?: boolean;
  hierarch?: boolean;
}

export class FitsHeader {
  readonly cards: FitsCard[];

  constructor(cards: FitsCard[] = []) {
    this.cards = cards;
  }

  /** Parses card images (80 characters each) up to END. */
  static parseImages(images: string[]): HeaderParseResult {
    const cards: FitsCard[] = [];
    for (let i = 0; i < images.length; i++) {
      const parsed = parseCard(images[i]!);
      if (parsed === 'END') return { header: new FitsHeader(cards), endFound: true };
      if ('problem' in parsed) return { problem: parsed.problem, cardIndex: i };
      const previous = cards[cards.length - 1];
      if (
        parsed.key === 'CONTINUE' &&
        typeof parsed.value === 'string' &&
        previous !== undefined &&
        typeof previous.value === 'string' &&
        previous.value.endsWith('&') &&
        previous.raw !== undefined
      ) {
        previous.value = previous.value.slice(0, -1) + parsed.value;
        if (parsed.comment !== undefined) previous.comment = previous.comment ? `${previous.comment} ${parsed.comment}` : parsed.comment;
        previous.raw.push(images[i]!);
        continue;
      }
      cards.push(parsed);
    }
    return { problem: 'no END card', cardIndex: images.length };
  }

  clone(): FitsHeader {
    return new FitsHeader(this.cards.map((c) => ({ ...c, ...(c.raw ? { raw: [...c.raw] } : {}) })));
  }

  private indexOf(key: string): number {
    const k = key.toUpperCase();
    return this.cards.findIndex((c) => c.key === k && c.value !== undefined);
  }

  /** The first card with a value for `key`. */
  card(key: string): FitsCard | undefined {
    const i = this.indexOf(key);
    return i >= 0 ? this.cards[i] : undefined;
  }

  has(key: string): boolean {
    return this.indexOf(key) >= 0;
  }

  get(key: string): CardValue | undefined {
    return this.card(key)?.value;
  }

  /** A finite number, also accepting numeric strings (some capture programs quote numbers). */
  getNumber(key: string): number | undefined {
    const v = this.get(key);
    if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
    if (typeof v === 'bigint') return Number(v);
    if (typeof v === 'string' && v.trim() !== '') {
      const n = Number(v.trim());
      return Number.isFinite(n) ? n : undefined;
    }
    return undefined;
  }

  getString(key: string): string | undefined {
    const v = this.get(key);
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'bigint') return String(v);
    return undefined;
  }

  getBoolean(key: string): boolean | undefined {
    const v = this.get(key);
    return typeof v === 'boolean' ? v : undefined;
  }

  /** Sets a value card in place (keeping its position) or appends it. */
  set(key: string, value: CardValue, options: SetOptions = {}): this {
    const k = key.toUpperCase();
    const card: FitsCard = { key: k, value };
    const hierarch = options.hierarch ?? k.length > 8;
    if (hierarch) card.hierarch = true;
    if (options.real && typeof value === 'number') card.real = true;
    const i = this.indexOf(k);
    const previous = i >= 0 ? this.cards[i] : undefined;
    const comment = options.comment ?? previous?.comment;
    if (comment !== undefined) card.comment = comment;
    if (i >= 0) this.cards[i] = card;
    else this.cards.push(card);
    return this;
  }

  /** Removes every value card with this key; returns how many were removed. */
  delete(key: string): number {
    const k = key.toUpperCase();
    const before = this.cards.length;
    for (let i = this.cards.length - 1; i >= 0; i--) {
      const c = this.cards[i]!;
      if (c.key === k && c.value !== undefined) this.cards.splice(i, 1);
    }
    return before - this.cards.length;
  }

  addHistory(text: string): this {
    this.cards.push({ key: 'HISTORY', comment: text });
    return this;
  }

  addComment(text: string): this {
    this.cards.push({ key: 'COMMENT', comment: text });
    return this;
  }

  /** All commentary texts for COMMENT or HISTORY, in order. */
  commentary(key: 'COMMENT' | 'HISTORY'): string[] {
    return this.cards.filter((c) => c.key === key && c.value === undefined).map((c) => c.comment ?? '');
  }

  /** Card images, END included, padded with blanks to whole 2880-byte blocks. */
  toBytes(): Uint8Array {
    const images: string[] = [];
    for (const card of this.cards) images.push(...formatCard(card));
    images.push('END'.padEnd(CARD_LENGTH));
    const text = images.join('');
    const length = Math.ceil(text.length / BLOCK_LENGTH) * BLOCK_LENGTH;
    const bytes = new Uint8Array(length).fill(0x20);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return bytes;
  }
}
