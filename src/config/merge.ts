// Layered parameters: defaults < stored parameters < JSON editor < visible form fields (the
// seed's precedence rule: form fields override the matching editor values). Plain objects
// merge key by key; arrays and scalars are replaced whole; `undefined` never overrides.

export type Layer = Record<string, unknown> | undefined | null;

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

/** Deep merge of `layers`, later ones winning. Inputs are not modified. */
export function mergeLayers(...layers: Layer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const layer of layers) if (layer) mergeInto(out, layer);
  return out;
}

function mergeInto(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined || key === '__proto__' || key === 'constructor' || key === 'prototype') continue;
    const current = target[key];
    if (isPlainObject(value)) {
      const base = isPlainObject(current) ? current : {};
      const merged: Record<string, unknown> = { ...base };
      mergeInto(merged, value);
      target[key] = merged;
    } else {
      target[key] = Array.isArray(value) ? [...value] : value;
    }
  }
}

/** Sets `value` at a dotted path (`rejection.low`), creating objects on the way. */
export function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') throw new Error(`illegal key "${key}" in ${dotted}`);
    if (!isPlainObject(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  const last = keys[keys.length - 1]!;
  if (last === '__proto__' || last === 'constructor' || last === 'prototype') throw new Error(`illegal key "${last}" in ${dotted}`);
  node[last] = value;
}

/** The value at a dotted path, or undefined. */
export function getPath(source: unknown, dotted: string): unknown {
  let node = source;
  for (const key of dotted.split('.')) {
    if (!isPlainObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** Dotted paths of every leaf (non-object value) under `source`. */
export function leafPaths(source: unknown, prefix = ''): string[] {
  if (!isPlainObject(source)) return prefix ? [prefix] : [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(source)) {
    const p = prefix ? `${prefix}.${k}` : k;
    if (isPlainObject(v) && Object.keys(v).length > 0) out.push(...leafPaths(v, p));
    else out.push(p);
  }
  return out;
}
