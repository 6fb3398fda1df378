// Dotted-path access to plain JSON objects (the browser twin of src/config/merge.ts, which the
// UI cannot import across the two TypeScript projects): get/set by `a.b.c`, and a deep merge in
// which later layers win key by key while arrays and scalars are replaced whole.

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function getPath(source: unknown, dotted: string): unknown {
  let node = source;
  for (const key of dotted.split('.')) {
    if (!isObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

export function setPath(target: Json, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) {
    if (FORBIDDEN.has(key)) return;
    if (!isObject(node[key])) node[key] = {};
    node = node[key] as Json;
  }
  const last = keys[keys.length - 1]!;
  if (!FORBIDDEN.has(last)) node[last] = value;
}

export function mergeLayers(...layers: (Json | null | undefined)[]): Json {
  const out: Json = {};
  for (const layer of layers) if (layer) mergeInto(out, layer);
  return out;
}

function mergeInto(target: Json, source: Json): void {
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined || FORBIDDEN.has(key)) continue;
    if (isObject(value)) {
      const merged: Json = isObject(target[key]) ? { ...(target[key] as Json) } : {};
      mergeInto(merged, value);
      target[key] = merged;
    } else target[key] = Array.isArray(value) ? structuredClone(value) : value;
  }
}

/** One key whose value a later layer replaced: where, and both values. */
export interface Override {
  path: string;
  before: unknown;
  after: unknown;
}

/**
 * The leaf keys `layer` sets to a value other than the one `base` holds (keys `base` lacks do not
 * count: the layer adds them, it does not override anything). Arrays and scalars compare whole.
 */
export function overriddenKeys(base: Json, layer: Json, prefix = ''): Override[] {
  const out: Override[] = [];
  for (const [k, v] of Object.entries(layer)) {
    if (!(k in base) || v === undefined) continue;
    const path = prefix ? `${prefix}.${k}` : k;
    const b = base[k];
    if (isObject(v) && isObject(b)) out.push(...overriddenKeys(b, v, path));
    else if (JSON.stringify(b) !== JSON.stringify(v)) out.push({ path, before: b, after: v });
  }
  return out;
}
