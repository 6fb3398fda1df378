// Locates and loads WGSL sources from the top-level shaders/ folder. The folder sits beside
// src/ in a checkout and beside dist/ in a built package, so it is found relative to this
// module in both layouts. Sources are read once per process.
// A line `//!include <path under shaders/>` is replaced by that file's text (WGSL has no
// imports): kernels that must agree on declarations, such as the two passes of one algorithm
// sharing a uniform block, keep them in one file. Each file is spliced at most once per shader
// (module-scope declarations are order-independent in WGSL), and a missing file or a path
// leaving shaders/ is an error naming the including file.

import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { resolve, sep } from 'node:path';

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

const INCLUDE = /^\/\/!include[ \t]+(\S+)[ \t]*$/gm;

const sources = new Map<string, string>();
export function loadShader(relativePath: string): string {
  let code = sources.get(relativePath);
  if (code === undefined) {
    code = expandShaderIncludes(relativePath, readShaderFile(relativePath, relativePath), readShaderFile);
    sources.set(relativePath, code);
  }
  return code;
}

function readShaderFile(relativePath: string, from: string): string {
  const base = resolve(shadersRoot());
  const file = resolve(base, relativePath);
  if (!file.startsWith(base + sep)) throw new Error(`${from}: shader path ${relativePath} is outside shaders/`);
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${from}: cannot read shader ${relativePath} (${(e as Error).message})`);
  }
}

/** `code` (the text of shader `from`) with its `//!include` lines replaced, recursively; `read(path, from)` supplies a file. */
export function expandShaderIncludes(from: string, code: string, read: (path: string, from: string) => string, seen = new Set([from])): string {
  return code.replace(INCLUDE, (_line, path: string) => {
    if (seen.has(path)) return `// (${path} already included)`;
    seen.add(path);
    return `// ---- ${path}\n${expandShaderIncludes(path, read(path, from), read, seen)}\n// ---- end of ${path}`;
  });
}
