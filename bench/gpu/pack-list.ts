// `node dist/bench/gpu/pack-list.js`: the node_modules packages the GPU bench needs on a machine
// that has none (bench/gpu/pack.sh tars them): the bare imports reachable from the entry points
// the device script runs, plus uvu (the test runner spawns its bin.js), closed over each
// package's dependencies and installed optional dependencies. Prints one `node_modules/NAME`
// per line. The import scan reads tsc's output, whose import forms are regular; a missed import
// shows as ERR_MODULE_NOT_FOUND in pack.sh's rehearsal, which runs from an unpacked copy.

import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const IMPORT = /(?:^|[;\s}])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|(?:^|[;\s])import\s*['"]([^'"]+)['"]/gm;

/** Module specifiers a compiled JS file imports (static and literal dynamic imports). */
export function importsOf(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(IMPORT)) out.push((m[1] ?? m[2] ?? m[3])!);
  return out;
}

/** The package a bare specifier names ('@scope/name/sub' → '@scope/name'); null for relative paths and Node's built-ins. */
export function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || isBuiltin(specifier)) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Bare packages reachable from `entries` through relative imports (files read with `read`). */
export function reachablePackages(entries: string[], read: (file: string) => string | null): { packages: Set<string>; missing: string[] } {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const missing: string[] = [];
  const stack = entries.map((e) => resolve(e));
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = read(file);
    if (source === null) {
      missing.push(file);
      continue;
    }
    for (const spec of importsOf(source)) {
      const pkg = packageOf(spec);
      if (pkg) packages.add(pkg);
      else if (spec.startsWith('.')) stack.push(resolve(dirname(file), spec));
    }
  }
  return { packages, missing };
}

export interface Manifest {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/**
 * Closes `roots` over dependencies (required) and optional dependencies (only those installed:
 * npm installs the current platform's, e.g. sharp's @img/sharp-linux-x64). `manifest` returns
 * null for a package that is not installed.
 */
export function packageClosure(roots: Iterable<string>, manifest: (name: string) => Manifest | null): { packages: string[]; notInstalled: string[] } {
  const done = new Set<string>();
  const notInstalled: string[] = [];
  const todo = [...roots];
  while (todo.length > 0) {
    const name = todo.pop()!;
    if (done.has(name)) continue;
    const m = manifest(name);
    if (!m) {
      notInstalled.push(name);
      continue;
    }
    done.add(name);
    todo.push(...Object.keys(m.dependencies ?? {}));
    for (const opt of Object.keys(m.optionalDependencies ?? {})) if (manifest(opt)) todo.push(opt);
  }
  return { packages: [...done].sort(), notInstalled: notInstalled.filter((n) => !done.has(n)).sort() };
}

function main(): void {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
  const dist = join(root, 'dist');
  const testGpu = join(dist, 'test', 'gpu');
  const entries = [
    join(dist, 'bench', 'run.js'),
    join(dist, 'bench', 'gpu', 'suite.js'),
    join(dist, 'bench', 'gpu', 'probe.js'),
    join(dist, 'bench', 'rawstack-child.js'),
    join(dist, 'test', 'run.js'),
    ...(existsSync(testGpu) ? readdirSync(testGpu).filter((f) => f.endsWith('.test.js')).map((f) => join(testGpu, f)) : []),
  ];
  const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : null);
  const { packages, missing } = reachablePackages(entries, read);
  packages.add('uvu');
  if (missing.length > 0) {
    console.error(`pack-list: files not found (build first?): ${missing.join(', ')}`);
    process.exitCode = 1;
    return;
  }
  const manifest = (name: string): Manifest | null => {
    const file = join(root, 'node_modules', name, 'package.json');
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Manifest) : null;
  };
  const { packages: all, notInstalled } = packageClosure(packages, manifest);
  if (notInstalled.length > 0) {
    console.error(`pack-list: required packages not installed: ${notInstalled.join(', ')}`);
    process.exitCode = 1;
    return;
  }
  for (const p of all) console.log(`node_modules/${p}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
