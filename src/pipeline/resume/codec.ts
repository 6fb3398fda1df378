// A JSON encoding of run state that round-trips exactly what JSON alone loses: Maps, typed
// arrays (their bytes as base64, so every float comes back bit for bit), NaN, ±Infinity and -0.
// Tagged values are objects with a `$t` key; plain objects never carry one in run state.
// Invariant: decode(encode(x)) is structurally equal to x for the value kinds run state holds
// (plain objects, arrays, strings, finite and non-finite numbers, booleans, null, Maps with
// JSON-encodable keys, typed arrays). undefined object fields are dropped, as JSON does.
// Paths inside the run folder: given `root` (the run folder), every string that is the folder
// or a path under it is written relative to it (tag `run`) and read back under the root the
// decoder is given, so a checkpoint of a run folder that was moved or copied points into the
// folder it now lies in, never into the one it was written in.

import { isAbsolute, join, relative, resolve, sep } from 'node:path';

const TYPED = {
  Float32Array,
  Float64Array,
  Int8Array,
  Int16Array,
  Int32Array,
  Uint8Array,
  Uint16Array,
  Uint32Array,
  Uint8ClampedArray,
} as const;
type TypedName = keyof typeof TYPED;

/** The run folder that paths are relative to (resolved against the working directory); none: strings are written as they are. */
export interface PathRoot {
  root?: string;
}

function runRelativeOf(v: string, root: string | undefined): string | null {
  if (!root || !isAbsolute(v) || !(v === root || v.startsWith(root.endsWith(sep) ? root : root + sep))) return null;
  return relative(root, v).split(sep).join('/');
}

function encodeValue(v: unknown, root: string | undefined): unknown {
  if (typeof v === 'string') {
    const rel = runRelativeOf(v, root);
    return rel === null ? v : { $t: 'run', v: rel };
  }
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return { $t: 'num', v: 'NaN' };
    if (v === Infinity) return { $t: 'num', v: 'Infinity' };
    if (v === -Infinity) return { $t: 'num', v: '-Infinity' };
    if (Object.is(v, -0)) return { $t: 'num', v: '-0' };
    return v;
  }
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : encodeValue(x, root)));
  if (v instanceof Date) return { $t: 'Date', v: v.toISOString() };
  if (v instanceof Map) return { $t: 'Map', e: [...v.entries()].map(([k, x]) => [encodeValue(k, root), encodeValue(x, root)]) };
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
    const name = v.constructor.name as TypedName;
    if (!(name in TYPED)) throw new Error(`cannot encode a ${name}`);
    return { $t: name, b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
  }
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === undefined || typeof x === 'function') continue;
    out[k] = encodeValue(x, root);
  }
  return out;
}

function decodeValue(v: unknown, root: string | undefined): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => decodeValue(x, root));
  const o = v as Record<string, unknown>;
  const tag = o.$t;
  if (typeof tag === 'string') {
    if (tag === 'num') return Number(o.v === '-0' ? -0 : o.v);
    if (tag === 'Date') return new Date(String(o.v));
    if (tag === 'run') {
      if (!root) throw new Error('encoded state holds run-folder paths: decode it with the run folder as root');
      const rel = String(o.v);
      // Written by runRelativeOf: never absolute, never climbing out of the folder.
      if (isAbsolute(rel) || rel.split('/').includes('..')) throw new Error(`run-folder path '${rel}' leaves the run folder`);
      return rel === '' ? root : join(root, ...rel.split('/'));
    }
    if (tag === 'Map') return new Map((o.e as [unknown, unknown][]).map(([k, x]) => [decodeValue(k, root), decodeValue(x, root)]));
    if (tag in TYPED) {
      const bytes = Buffer.from(String(o.b), 'base64');
      const Ctor = TYPED[tag as TypedName];
      const copy = new Uint8Array(bytes.byteLength);
      copy.set(bytes);
      return new Ctor(copy.buffer, 0, bytes.byteLength / Ctor.BYTES_PER_ELEMENT);
    }
    throw new Error(`unknown tag ${tag} in encoded state`);
  }
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(o)) out[k] = decodeValue(x, root);
  return out;
}

/** The value as JSON text (tagged where JSON would lose it; paths under `root` relative to it). */
export function encodeState(value: unknown, paths: PathRoot = {}): string {
  return JSON.stringify(encodeValue(value, paths.root === undefined ? undefined : resolve(paths.root)));
}

/** The value encodeState wrote, run-folder paths under `root`. Throws on text that is not such an encoding. */
export function decodeState<T = unknown>(text: string, paths: PathRoot = {}): T {
  return decodeValue(JSON.parse(text), paths.root === undefined ? undefined : resolve(paths.root)) as T;
}
