// Locates and loads WGSL sources from the top-level shaders/ folder. The folder sits beside
// src/ in a checkout and beside dist/ in a built package, so it is found relative to this
// module in both layouts. Sources are read once per process.

import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const candidates = [
  new URL('../../shaders/', import.meta.url), // running from src/ (not used with tsc, kept for tooling)
  new URL('../../../shaders/', import.meta.url), // running from dist/src/gpu/
];

let root: string | undefined;
export function shadersRoot(): string {
  if (root) return root;
  for (const url of candidates) {
    const dir = fileURLToPath(url);
    if (existsSync(dir)) return (root = dir);
  }
  throw new Error('shaders/ folder not found beside the installed skystack');
}

const sources = new Map<string, string>();
export function loadShader(relativePath: string): string {
  let code = sources.get(relativePath);
  if (code === undefined) {
    code = readFileSync(join(shadersRoot(), relativePath), 'utf8');
    sources.set(relativePath, code);
  }
  return code;
}
