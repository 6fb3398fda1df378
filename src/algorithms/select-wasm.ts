// The sky mesh's median selections (background.ts `tileStats`: ~3000 per 2048×1536 frame, each of
// ~140–280 values) in WebAssembly, emitted from this file (wasm-emit.ts; no toolchain).
// Contract: `median(a, n)` returns exactly what robust-stats' `medianInPlaceF32` returns on the
// same n values and leaves them in the same order: it is the same quickselect (median-of-three
// pivot, the same partition), compiled without the bounds checks and polymorphic loads of the
// JavaScript; test/algorithms/select-wasm.test.ts checks the two against each other.
// Memory: one exported linear memory, grown by the caller to hold its scratch arrays.

import {
  BLOCK, BR, BR_IF, END, F32, F32_CONST, F32_GT, F32_LOAD, F32_LT, F32_STORE, F64, F64_ADD, F64_CONST, F64_DIV,
  F64_PROMOTE_F32, HEADER, I32, I32_ADD, I32_AND, I32_CONST, I32_EQZ, I32_GE_S, I32_GT_S, I32_LE_S, I32_SHL, I32_SHR_U,
  I32_SUB, IF, LOOP, RETURN, VOID, f32Bytes, f64Bytes, get, instantiate, mem, name, section, set, sleb, tee, uleb, vec,
  type WasmMemory,
} from './wasm-emit.js';

export interface SelectKernels {
  memory: WasmMemory;
  /** Median of the n f32 values at byte offset `a` (reordered in place, as medianInPlaceF32 does); NaN when n = 0. */
  median(a: number, n: number): number;
}

function medianBody(): number[] {
  // Params 0 base, 1 n (i32). Locals: 2 k, 3 lo, 4 hi, 5 mid, 6 i, 7 j (i32); 8 x, 9 y, 10 z, 11 t (f32).
  const [base, n, k, lo, hi, mid, i, j, x, y, z, t] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
  const locals = vec([
    [...uleb(6), I32],
    [...uleb(4), F32],
  ]);
  const addr = (idx: number): number[] => [...get(base), ...get(idx), I32_CONST, 2, I32_SHL, I32_ADD];
  const load = (idx: number): number[] => [...addr(idx), F32_LOAD, ...mem(0)];
  const code = [
    ...get(n), I32_EQZ, IF, VOID, F64_CONST, ...f64Bytes(NaN), RETURN, END,
    ...get(n), I32_CONST, 1, I32_SHR_U, ...set(k),
    ...get(n), I32_CONST, 1, I32_SUB, ...set(hi),
    BLOCK, VOID, LOOP, VOID,
    // while (hi > lo)
    ...get(hi), ...get(lo), I32_LE_S, BR_IF, 1,
    ...get(lo), ...get(hi), I32_ADD, I32_CONST, 1, I32_SHR_U, ...set(mid),
    ...load(lo), ...set(x), ...load(mid), ...set(y), ...load(hi), ...set(z),
    // Median of three, as selectInPlaceF32: sort x, y; y = min(y, z); y = max(x, y).
    ...get(x), ...get(y), F32_GT, IF, VOID, ...get(x), ...set(t), ...get(y), ...set(x), ...get(t), ...set(y), END,
    ...get(y), ...get(z), F32_GT, IF, VOID, ...get(z), ...set(y), END,
    ...get(x), ...get(y), F32_GT, IF, VOID, ...get(x), ...set(y), END,
    ...get(lo), ...set(i), ...get(hi), ...set(j),
    BLOCK, VOID, LOOP, VOID,
    // while (i <= j)
    ...get(i), ...get(j), I32_GT_S, BR_IF, 1,
    BLOCK, VOID, LOOP, VOID, ...load(i), ...get(y), F32_LT, I32_EQZ, BR_IF, 1, ...get(i), I32_CONST, 1, I32_ADD, ...set(i), BR, 0, END, END,
    BLOCK, VOID, LOOP, VOID, ...load(j), ...get(y), F32_GT, I32_EQZ, BR_IF, 1, ...get(j), I32_CONST, ...sleb(-1), I32_ADD, ...set(j), BR, 0, END, END,
    ...get(i), ...get(j), I32_LE_S, IF, VOID,
    ...load(i), ...set(t),
    ...addr(i), ...load(j), F32_STORE, ...mem(0),
    ...addr(j), ...get(t), F32_STORE, ...mem(0),
    ...get(i), I32_CONST, 1, I32_ADD, ...set(i),
    ...get(j), I32_CONST, ...sleb(-1), I32_ADD, ...set(j),
    END,
    BR, 0,
    END, END,
    // if (k <= j) hi = j; else if (k >= i) lo = i; else break.
    ...get(k), ...get(j), I32_LE_S, IF, VOID, ...get(j), ...set(hi), BR, 1, END,
    ...get(k), ...get(i), I32_GE_S, IF, VOID, ...get(i), ...set(lo), BR, 1, END,
    END, END,
    // Odd n: a[k]. Even n: (largest of a[0 … k) + a[k]) / 2, in f64.
    ...load(k), ...set(z),
    ...get(n), I32_CONST, 1, I32_AND, IF, VOID, ...get(z), F64_PROMOTE_F32, RETURN, END,
    F32_CONST, ...f32Bytes(-Infinity), ...set(x),
    I32_CONST, 0, ...set(i),
    BLOCK, VOID, LOOP, VOID,
    ...get(i), ...get(k), I32_GE_S, BR_IF, 1,
    ...load(i), ...tee(t), ...get(x), F32_GT, IF, VOID, ...get(t), ...set(x), END,
    ...get(i), I32_CONST, 1, I32_ADD, ...set(i),
    BR, 0,
    END, END,
    ...get(x), F64_PROMOTE_F32, ...get(z), F64_PROMOTE_F32, F64_ADD, F64_CONST, ...f64Bytes(2), F64_DIV,
    END,
  ];
  return [...locals, ...code];
}

function moduleBytes(): Uint8Array {
  const type = [0x60, ...vec([[I32], [I32]]), ...vec([[F64]])];
  const body = medianBody();
  return Uint8Array.from([
    ...HEADER,
    ...section(1, vec([type])),
    ...section(3, vec([[0]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(7, vec([
      [...name('memory'), 0x02, 0],
      [...name('median'), 0x00, 0],
    ])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

let kernels: SelectKernels | null | undefined;

/** This thread's selection kernel (compiled on first use), or null where WebAssembly is unavailable. */
export function selectKernels(): SelectKernels | null {
  if (kernels !== undefined) return kernels;
  try {
    const e = instantiate(moduleBytes()) as unknown as SelectKernels;
    kernels = { memory: e.memory, median: e.median };
  } catch {
    kernels = null;
  }
  return kernels;
}

/**
 * Two Float32Arrays of `length` values each in the kernel's memory (grown when needed), for a
 * caller that selects in them with `median(array.byteOffset, n)`. Views are valid until the next
 * call of this function (growing the memory detaches them).
 */
export function selectScratch(k: SelectKernels, length: number): [Float32Array, Float32Array] {
  const bytes = 2 * length * 4;
  const pages = Math.ceil(bytes / 65536) - k.memory.buffer.byteLength / 65536;
  if (pages > 0) k.memory.grow(pages);
  return [new Float32Array(k.memory.buffer, 0, length), new Float32Array(k.memory.buffer, length * 4, length)];
}
