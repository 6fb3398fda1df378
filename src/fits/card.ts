// One FITS header card: parsing an 80-character image into a typed card, and formatting a
// typed card back into one or more 80-character images (long strings use the CONTINUE
// convention, long keywords the ESO HIERARCH convention).
// Invariant: format(parse(x)) keeps the value, type and comment of x; exact bytes are kept
// separately (FitsCard.raw) by the header for cards nobody changed.

export const CARD_LENGTH = 80;
export const BLOCK_LENGTH = 2880;
export const CARDS_PER_BLOCK = BLOCK_LENGTH / CARD_LENGTH;

export type CardValue = string | number | bigint | boolean | null;

export interface FitsCard {
  /** Upper-case keyword; for HIERARCH cards the words after `HIERARCH` (e.g. `ESO DET DIT`); `''` for blank cards. */
  key: string;
  /** Absent for commentary cards (COMMENT, HISTORY, blank, keywords without `= `). `null` = undefined value. */
  value?: CardValue;
  /** Card comment, or the text of a commentary card. */
  comment?: string;
  /** True when a number was written as a real (decimal point or exponent), so it round-trips as a real. */
  real?: boolean;
  /** True for ESO HIERARCH cards. */
  hierarch?: boolean;
  /** The original card images (with CONTINUE cards) as read; dropped whenever the card changes. */
  raw?: string[];
}

export const COMMENTARY_KEYS = new Set(['COMMENT', 'HISTORY', '']);

const KEYWORD_RE = /^[A-Z0-9_-]*$/;

export type CardProblem = { problem: string };

/** Splits the value part (after `= `) of a card into value, comment and flags. */
function parseValueField(field: string): { value: CardValue; comment?: string; real?: boolean; continues?: boolean } | CardProblem {
  let i = 0;
  while (i < field.length && field[i] === ' ') i++;
  if (i >= field.length) return { value: null };
  if (field[i] === "'") {
    let text = '';
    let j = i + 1;
    for (;;) {
      if (j >= field.length) return { problem: 'unterminated string value' };
      const ch = field[j]!;
      if (ch === "'") {
        if (field[j + 1] === "'") {
          text += "'";
          j += 2;
          continue;
        }
        j++;
        break;
      }
      text += ch;
      j++;
    }
    // Trailing blanks inside quotes are not significant; leading ones are.
    text = text.replace(/ +$/, '');
    const rest = field.slice(j);
    const slash = rest.indexOf('/');
    const comment = slash >= 0 ? rest.slice(slash + 1).trim() : undefined;
    return comment !== undefined && comment !== '' ? { value: text, comment } : { value: text };
  }
  const slash = field.indexOf('/', i);
  const token = (slash >= 0 ? field.slice(i, slash) : field.slice(i)).trim();
  const commentText = slash >= 0 ? field.slice(slash + 1).trim() : '';
  const withComment = <T extends object>(v: T) => (commentText !== '' ? { ...v, comment: commentText } : v);
  if (token === '') return withComment({ value: null });
  if (token === 'T') return withComment({ value: true });
  if (token === 'F') return withComment({ value: false });
  if (/^[+-]?\d+$/.test(token)) {
    const asNumber = Number(token);
    if (Number.isSafeInteger(asNumber)) return withComment({ value: asNumber });
    return withComment({ value: BigInt(token) });
  }
  if (/^[+-]?(\d+\.?\d*|\.\d+)([EeDd][+-]?\d+)?$/.test(token)) {
    return withComment({ value: Number(token.replace(/[Dd]/, 'E')), real: true });
  }
  // Complex numbers and vendor oddities stay as their literal text, so nothing is lost.
  return withComment({ value: token });
}

/** Parses one 80-character card image. Returns `'END'` for the END card. */
export function parseCard(image: string): FitsCard | 'END' | CardProblem {
  if (image.length !== CARD_LENGTH) return { problem: `card has ${image.length} characters, expected 80` };
  for (let i = 0; i < image.length; i++) {
    const c = image.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return { problem: `non-printable byte 0x${c.toString(16).padStart(2, '0')} in card "${image.slice(0, 8).trimEnd()}"` };
  }
  const key = image.slice(0, 8).trimEnd();
  if (key === 'END' && image.slice(8).trim() === '') return 'END';
  if (!KEYWORD_RE.test(key) || / /.test(image.slice(0, 8).trimEnd())) {
    return { problem: `malformed keyword "${image.slice(0, 8)}"` };
  }
  if (key === 'HIERARCH') {
    const rest = image.slice(8);
    const eq = rest.indexOf('=');
    if (eq < 0) return { key: 'HIERARCH', comment: rest.trim(), raw: [image] };
    const name = rest.slice(0, eq).trim().replace(/\s+/g, ' ').toUpperCase();
    const parsed = parseValueField(rest.slice(eq + 1));
    if ('problem' in parsed) return { problem: `${parsed.problem} in HIERARCH ${name}` };
    const card: FitsCard = { key: name, value: parsed.value, hierarch: true, raw: [image] };
    if (parsed.comment !== undefined) card.comment = parsed.comment;
    if (parsed.real) card.real = true;
    return card;
  }
  if (COMMENTARY_KEYS.has(key) || image.slice(8, 10) !== '= ') {
    if (key === 'CONTINUE') {
      const parsed = parseValueField(image.slice(8));
      if ('problem' in parsed) return { problem: `${parsed.problem} in CONTINUE card` };
      const card: FitsCard = { key, value: parsed.value, raw: [image] };
      if (parsed.comment !== undefined) card.comment = parsed.comment;
      return card;
    }
    return { key, comment: image.slice(8).trimEnd(), raw: [image] };
  }
  const parsed = parseValueField(image.slice(10));
  if ('problem' in parsed) return { problem: `${parsed.problem} in card ${key}` };
  const card: FitsCard = { key, value: parsed.value, raw: [image] };
  if (parsed.comment !== undefined) card.comment = parsed.comment;
  if (parsed.real) card.real = true;
  return card;
}

/** Shortest text that reads back as the same double, in FITS real syntax (always a `.` or `E`). */
export function formatReal(v: number): string {
  if (Number.isNaN(v) || !Number.isFinite(v)) throw new RangeError(`FITS cannot store ${v} in a header card`);
  let s = String(v).toUpperCase();
  if (s.length > 20) s = v.toExponential().toUpperCase();
  if (!/[.E]/.test(s)) s += '.0';
  else if (/^-?\d+E/.test(s)) s = s.replace('E', '.0E');
  return s;
}

function formatValue(card: FitsCard): string {
  const v = card.value;
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return (v ? 'T' : 'F').padStart(20);
  if (typeof v === 'bigint') return v.toString().padStart(20);
  if (typeof v === 'number') {
    const text = card.real || !Number.isInteger(v) ? formatReal(v) : String(v);
    return text.padStart(20);
  }
  const quoted = `'${v.replace(/'/g, "''").padEnd(8)}'`;
  return quoted.padEnd(20);
}

function pad(line: string): string {
  return line.length >= CARD_LENGTH ? line.slice(0, CARD_LENGTH) : line.padEnd(CARD_LENGTH);
}

function withComment(head: string, comment: string | undefined): string {
  if (comment === undefined || comment === '') return pad(head);
  const line = `${head} / ${comment}`;
  return pad(line); // an over-long comment is cut: comments carry no data
}

/**
 * Splits a string value into CONTINUE-sized chunks so that no chunk ends inside a `''` escape.
 * Every chunk, the last included, leaves one free slot (for a continuation '&').
 */
function splitLongString(text: string, firstRoom: number, nextRoom: number): string[] {
  const chunks: string[] = [];
  let rest = text;
  let room = firstRoom;
  while (rest.length > 0) {
    // Each character costs 1, a quote 2 (escaped); keep one slot for '&' unless this is the last chunk.
    let cost = 0;
    let n = 0;
    while (n < rest.length) {
      const c = rest[n] === "'" ? 2 : 1;
      if (cost + c > room - 1) break;
      cost += c;
      n++;
    }
    const fitsWhole = n === rest.length && cost <= room;
    if (fitsWhole) {
      chunks.push(rest);
      break;
    }
    if (n === 0) n = 1;
    chunks.push(rest.slice(0, n) + '&');
    rest = rest.slice(n);
    room = nextRoom;
  }
  return chunks;
}

function assertPrintable(text: string, what: string): void {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) throw new RangeError(`${what} contains character U+${c.toString(16).padStart(4, '0')}; FITS headers hold printable ASCII only`);
  }
}

/**
 * Formats a card into one or more 80-character images. Throws RangeError for what FITS cannot
 * hold (non-ASCII text, NaN or infinite numbers, a HIERARCH card longer than one card).
 */
export function formatCard(card: FitsCard): string[] {
  if (card.raw) return card.raw;
  const key = card.key;
  assertPrintable(key, `keyword "${key}"`);
  if (card.comment !== undefined) assertPrintable(card.comment, `comment of ${key}`);
  if (typeof card.value === 'string') assertPrintable(card.value, `value of ${key}`);
  if (card.value === undefined) {
    const text = card.comment ?? '';
    if (key === 'COMMENT' || key === 'HISTORY' || key === '') {
      // Long commentary is split over several cards of the same keyword.
      const lines: string[] = [];
      for (let i = 0; i < Math.max(1, text.length); i += 72) lines.push(pad(key.padEnd(8) + text.slice(i, i + 72)));
      return lines;
    }
    return [pad(key.padEnd(8) + text)];
  }
  if (card.hierarch) {
    const head = `HIERARCH ${key} = ${formatValue(card).trim()}`;
    if (head.length > CARD_LENGTH) throw new RangeError(`HIERARCH ${key}: keyword and value need ${head.length} characters, more than one 80-character card`);
    return [withComment(head, card.comment)];
  }
  if (key.length > 8 || !KEYWORD_RE.test(key)) throw new RangeError(`keyword "${key}" is not a valid FITS keyword (use hierarch)`);
  const head = key.padEnd(8) + '= ';
  if (typeof card.value === 'string') {
    const escapedLength = card.value.replace(/'/g, "''").length;
    if (escapedLength <= 68) return [withComment(head + formatValue(card), card.comment)];
    // Long string: OGIP CONTINUE convention; 70 columns hold the quotes plus 68 characters.
    const chunks = splitLongString(card.value, 68, 68);
    const lines = chunks.map((chunk, i) => (i === 0 ? head : 'CONTINUE  ') + `'${chunk.replace(/'/g, "''")}'`);
    const comment = card.comment ?? '';
    const last = lines[lines.length - 1]!;
    if (comment === '' || last.length + 3 + comment.length <= CARD_LENGTH) {
      lines[lines.length - 1] = withComment(last, card.comment);
      return lines.map(pad);
    }
    // No room for the comment: continue with an empty string that carries it (as astropy does).
    // splitLongString leaves a free slot in every chunk, the last one included, for this '&'.
    const chunks2 = [...chunks.slice(0, -1), `${chunks[chunks.length - 1]!}&`];
    const out = chunks2.map((chunk, i) => pad((i === 0 ? head : 'CONTINUE  ') + `'${chunk.replace(/'/g, "''")}'`));
    out.push(withComment("CONTINUE  ''", comment));
    return out;
  }
  return [withComment(head + formatValue(card), card.comment)];
}
