// The shader loader's `//!include` lines (src/gpu/shaders.ts): spliced once, recursively, and
// every registered kernel's source comes out without an include line left or a declaration
// spliced twice.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expandShaderIncludes, loadShader } from '../../src/gpu/shaders.js';
import { KERNELS } from '../../src/gpu/registry.js';

const files: Record<string, string> = {
  'a/main.wgsl': 'fn main() {}\n//!include a/lib.wgsl\n//!include b/other.wgsl\n',
  'a/lib.wgsl': 'fn lib() {}\n//!include b/other.wgsl\n',
  'b/other.wgsl': 'fn other() {}',
};
const read = (path: string, from: string) => {
  const text = files[path];
  if (text === undefined) throw new Error(`${from}: cannot read shader ${path}`);
  return text;
};

test('expandShaderIncludes: nested includes spliced, each file once, the rest of the text kept', () => {
  const out = expandShaderIncludes('a/main.wgsl', files['a/main.wgsl']!, read);
  assert.is(out.match(/fn other\(\)/g)?.length, 1, 'b/other.wgsl included by both files appears once');
  assert.is(out.match(/fn lib\(\)/g)?.length, 1);
  assert.ok(out.startsWith('fn main() {}\n// ---- a/lib.wgsl\nfn lib() {}\n// ---- b/other.wgsl\nfn other() {}'), out);
  assert.ok(out.includes('// (b/other.wgsl already included)'));
  assert.not.match(out, /^\/\/!include/m);
  // An include of itself is not spliced again.
  assert.is(expandShaderIncludes('b/other.wgsl', '//!include b/other.wgsl\nfn x() {}', read), '// (b/other.wgsl already included)\nfn x() {}');
});

test('expandShaderIncludes: a missing file names the including shader', () => {
  assert.throws(() => expandShaderIncludes('a/main.wgsl', '//!include a/none.wgsl', read), /a\/main\.wgsl: cannot read shader a\/none\.wgsl/);
});

test('loadShader: a path leaving shaders/ is refused', () => {
  assert.throws(() => loadShader('../package.json'), /outside shaders\//);
});

test('every registered kernel loads with its includes spliced and no function defined twice', () => {
  const shaders = [...new Set(Object.values(KERNELS).map((k) => k.shader))];
  assert.ok(shaders.includes('warp/lanczos3_rows.wgsl') && shaders.includes('warp/lanczos3_cols.wgsl'));
  for (const path of shaders) {
    const code = loadShader(path);
    assert.not.match(code, /^\/\/!include/m, `${path}: an include line is left`);
    const fns = [...code.matchAll(/^fn\s+(\w+)/gm)].map((m) => m[1]!);
    assert.is(new Set(fns).size, fns.length, `${path}: a function is defined twice`);
  }
  // The two separable passes share one uniform block (one layout in src/gpu/kernels/warp.ts).
  const block = (code: string) => code.slice(code.indexOf('struct Params {'), code.indexOf('}', code.indexOf('struct Params {')));
  assert.is(block(loadShader('warp/lanczos3_rows.wgsl')), block(loadShader('warp/lanczos3_cols.wgsl')));
  assert.ok(block(loadShader('warp/lanczos3_rows.wgsl')).includes('irows: u32'));
});

test.run();
