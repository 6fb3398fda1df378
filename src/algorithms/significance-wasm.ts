// WebAssembly SIMD kernels of star detection's significance image (stars.ts `significance`):
// the horizontal 5-tap pass of one row and the fused vertical pass + sky subtraction + store of
// one sky segment. The module is emitted from this file (no toolchain): a few hundred bytes,
// compiled once per thread on first use.
// Contract: bit-identical to the TypeScript loops in stars.ts (the reference, kept and tested
// against this in test/algorithms/significance-wasm.test.ts). Every value is computed in f64
// with the same operations in the same order as the TypeScript (f64x2 lanes, no fused
// multiply-add), loaded from and rounded to f32 as the Float32Arrays do; the sky level and
// 1/noise advance by the same scalar f64 additions, pixel by pixel. Rows with NaN pixels are not
// this module's business (the caller runs the TypeScript row instead: NaN is filled from the sky).
// Memory: one exported linear memory, grown to hold the caller's row buffers (O(width)).


import {
  I32,
  F64,
  V128,
  I32_CONST,
  I32_ADD,
  I32_AND,
  I32_SHL,
  I32_GE_U,
  I32_LT_U,
  F64_CONST,
  F64_ADD,
  F64_SUB,
  F64_MUL,
  F64_GT,
  F64_LT,
  F64_PROMOTE_F32,
  F32_DEMOTE_F64,
  F32_LOAD,
  F32_STORE,
  BLOCK,
  LOOP,
  IF,
  BR,
  BR_IF,
  END,
  SELECT,
  VOID,
  V128_STORE64_LANE,
  F64X2_SPLAT,
  F64X2_EXTRACT,
  F64X2_REPLACE,
  F64X2_ADD,
  F64X2_SUB,
  F64X2_MUL,
  F64X2_PMAX,
  F64X2_LT,
  V128_CONST,
  V128_AND,
  I64X2_ALL_TRUE,
  F32X4_DEMOTE,
  uleb,
  sleb,
  f64Bytes,
  simd,
  get,
  set,
  tee,
  mem,
  load2,
  section,
  vec,
  name,
  instantiate,
  HEADER,
  type WasmMemory,
} from './wasm-emit.js';

/** Row kernels over a WebAssembly memory; byte offsets index `memory`. */
export interface SignificanceKernels {
  memory: WasmMemory;
  /**
   * Horizontal pass: for x in [0, w), f32 dst[x] = k0·c + k1·(b + d) + k2·(a + e) with a … e the
   * padded row src[x … x + 4] (src holds the row from byte offset src + 8, two clamped pixels
   * each side). Returns 1 when every one of the row's own w pixels is < near (none NaN), else 0.
   */
  hpass(src: number, dst: number, w: number, k0: number, k1: number, k2: number, near: number): number;
  /**
   * Vertical pass of columns [x0, end): v = (k0·c + k1·(a1 + b1) + k2·(a2 + b2) − lv)·inv, f32
   * out[x] = v, lv += dl and inv += dinv after each pixel. Rows a2 … b2 are row pointers (row y − 2
   * … y + 2). Returns the maximum of v (−Infinity when none is greater; NaN never wins).
   */
  vpass(a2: number, a1: number, c: number, b1: number, b2: number, out: number, x0: number, end: number, lv: number, dl: number, inv: number, dinv: number, k0: number, k1: number, k2: number): number;
}

/** hpass(src, dst, w, k0, k1, k2, near) -> i32. */
function hpassBody(): number[] {
  // Params 0 src, 1 dst, 2 w (i32); 3 k0, 4 k1, 5 k2, 6 near (f64).
  // Locals: 7 p, 8 q, 9 qend (i32); 10 K0, 11 K1, 12 K2, 13 ALL, 14 C, 15 NEAR (v128); 16 c (f64); 17 ok (i32).
  const [src, dst, w, k0, k1, k2, near, p, q, qend, K0, K1, K2, ALL, C, NEAR, c, ok] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17];
  const locals = vec([
    [...uleb(3), I32],
    [...uleb(6), V128],
    [...uleb(1), F64],
    [...uleb(1), I32],
  ]);
  const code = [
    ...get(k0), ...simd(F64X2_SPLAT), ...set(K0),
    ...get(k1), ...simd(F64X2_SPLAT), ...set(K1),
    ...get(k2), ...simd(F64X2_SPLAT), ...set(K2),
    ...get(near), ...simd(F64X2_SPLAT), ...set(NEAR),
    ...simd(V128_CONST), ...Array<number>(16).fill(0xff), ...set(ALL),
    ...get(src), ...set(p),
    ...get(dst), ...set(q),
    ...get(dst), ...get(w), I32_CONST, ...sleb(-2), I32_AND, I32_CONST, 2, I32_SHL, I32_ADD, ...set(qend),
    BLOCK, VOID, LOOP, VOID,
    ...get(q), ...get(qend), I32_GE_U, BR_IF, 1,
    // C = pixels x, x + 1 (padded offset 8 bytes); ALL keeps the lanes where every pixel < near
    // (false for NaN, as the scan's !(v < near)).
    ...get(p), ...load2(8), ...tee(C), ...get(NEAR), ...simd(F64X2_LT), ...get(ALL), ...simd(V128_AND), ...set(ALL),
    ...get(q),
    // ((k0·c + k1·(b + d)) + k2·(a + e)), as the TypeScript evaluates it.
    ...get(K0), ...get(C), ...simd(F64X2_MUL),
    ...get(K1), ...get(p), ...load2(4), ...get(p), ...load2(12), ...simd(F64X2_ADD), ...simd(F64X2_MUL), ...simd(F64X2_ADD),
    ...get(K2), ...get(p), ...load2(0), ...get(p), ...load2(16), ...simd(F64X2_ADD), ...simd(F64X2_MUL), ...simd(F64X2_ADD),
    ...simd(F32X4_DEMOTE), ...simd(V128_STORE64_LANE), ...mem(0), 0,
    ...get(p), I32_CONST, 8, I32_ADD, ...set(p),
    ...get(q), I32_CONST, 8, I32_ADD, ...set(q),
    BR, 0,
    END, END,
    ...get(ALL), ...simd(I64X2_ALL_TRUE), ...set(ok),
    // Odd width: the last pixel, scalar.
    ...get(w), I32_CONST, 1, I32_AND, IF, VOID,
    ...get(p), F32_LOAD, ...mem(8), F64_PROMOTE_F32, ...set(c),
    ...get(q),
    ...get(k0), ...get(c), F64_MUL,
    ...get(k1), ...get(p), F32_LOAD, ...mem(4), F64_PROMOTE_F32, ...get(p), F32_LOAD, ...mem(12), F64_PROMOTE_F32, F64_ADD, F64_MUL, F64_ADD,
    ...get(k2), ...get(p), F32_LOAD, ...mem(0), F64_PROMOTE_F32, ...get(p), F32_LOAD, ...mem(16), F64_PROMOTE_F32, F64_ADD, F64_MUL, F64_ADD,
    F32_DEMOTE_F64, F32_STORE, ...mem(0),
    ...get(ok), ...get(c), ...get(near), F64_LT, I32_AND, ...set(ok),
    END,
    ...get(ok),
    END,
  ];
  return [...locals, ...code];
}

/** vpass(a2, a1, c, b1, b2, out, x0, end, lv, dl, inv, dinv, k0, k1, k2) -> f64. */
function vpassBody(): number[] {
  // Params 0–7 i32 (a2, a1, c, b1, b2, out, x0, end); 8–14 f64 (lv, dl, inv, dinv, k0, k1, k2).
  // Locals: 15 off, 16 offEnd (i32); 17 K0, 18 K1, 19 K2, 20 MX, 21 V (v128); 22 t, 23 m, 24 v (f64).
  const [a2, a1, c, b1, b2, out, x0, end, lv, dl, inv, dinv, k0, k1, k2] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14];
  const [off, offEnd, K0, K1, K2, MX, V, t, m, v] = [15, 16, 17, 18, 19, 20, 21, 22, 23, 24];
  const locals = vec([
    [...uleb(2), I32],
    [...uleb(5), V128],
    [...uleb(3), F64],
  ]);
  const at = (row: number): number[] => [...get(row), ...get(off), I32_ADD];
  // Sum of the five taps at `off`, as the TypeScript evaluates it; f64x2 (vector) or f64 (scalar).
  const taps = (vector: boolean): number[] => {
    const ld = vector ? load2(0) : [F32_LOAD, ...mem(0), F64_PROMOTE_F32];
    const [mul, add] = vector ? [simd(F64X2_MUL), simd(F64X2_ADD)] : [[F64_MUL], [F64_ADD]];
    const k = (i: number): number[] => (vector ? get(i) : get(i - 5));
    return [
      ...k(K0), ...at(c), ...ld, ...mul,
      ...k(K1), ...at(a1), ...ld, ...at(b1), ...ld, ...add, ...mul, ...add,
      ...k(K2), ...at(a2), ...ld, ...at(b2), ...ld, ...add, ...mul, ...add,
    ];
  };
  // (k(K0) − 5 = k0's param index: K0 = 17 → 12, K1 → 13, K2 → 14.)
  const code = [
    ...get(k0), ...simd(F64X2_SPLAT), ...set(K0),
    ...get(k1), ...simd(F64X2_SPLAT), ...set(K1),
    ...get(k2), ...simd(F64X2_SPLAT), ...set(K2),
    F64_CONST, ...f64Bytes(-Infinity), ...simd(F64X2_SPLAT), ...set(MX),
    ...get(x0), I32_CONST, 2, I32_SHL, ...set(off),
    ...get(off), ...get(end), ...get(x0), 0x6b /* i32.sub */, I32_CONST, ...sleb(-2), I32_AND, I32_CONST, 2, I32_SHL, I32_ADD, ...set(offEnd),
    BLOCK, VOID, LOOP, VOID,
    ...get(off), ...get(offEnd), I32_GE_U, BR_IF, 1,
    ...taps(true),
    // − (lv, lv + dl), then × (inv, inv + dinv); both advance by two scalar additions.
    ...get(lv), ...simd(F64X2_SPLAT), ...get(lv), ...get(dl), F64_ADD, ...tee(t), ...simd(F64X2_REPLACE), 1,
    ...get(t), ...get(dl), F64_ADD, ...set(lv),
    ...simd(F64X2_SUB),
    ...get(inv), ...simd(F64X2_SPLAT), ...get(inv), ...get(dinv), F64_ADD, ...tee(t), ...simd(F64X2_REPLACE), 1,
    ...get(t), ...get(dinv), F64_ADD, ...set(inv),
    ...simd(F64X2_MUL), ...set(V),
    ...at(out), ...get(V), ...simd(F32X4_DEMOTE), ...simd(V128_STORE64_LANE), ...mem(0), 0,
    // MX = V > MX ? V : MX per lane (NaN never replaces MX): pmax(MX, V) is MX < V ? V : MX.
    ...get(MX), ...get(V), ...simd(F64X2_PMAX), ...set(MX),
    ...get(off), I32_CONST, 8, I32_ADD, ...set(off),
    BR, 0,
    END, END,
    // The lanes' maxima (of the even and odd columns): the larger.
    ...get(MX), ...simd(F64X2_EXTRACT), 0, ...set(m),
    ...get(MX), ...simd(F64X2_EXTRACT), 1, ...set(t),
    ...get(t), ...get(m), ...get(t), ...get(m), F64_GT, SELECT, ...set(m),
    // Odd length: the last column, scalar.
    ...get(off), ...get(end), I32_CONST, 2, I32_SHL, I32_LT_U, IF, VOID,
    ...taps(false), ...get(lv), F64_SUB, ...get(inv), F64_MUL, ...set(v),
    ...at(out), ...get(v), F32_DEMOTE_F64, F32_STORE, ...mem(0),
    ...get(v), ...get(m), ...get(v), ...get(m), F64_GT, SELECT, ...set(m),
    END,
    ...get(m),
    END,
  ];
  return [...locals, ...code];
}

function moduleBytes(): Uint8Array {
  const hType = [0x60, ...vec([[I32], [I32], [I32], [F64], [F64], [F64], [F64]]), ...vec([[I32]])];
  const vType = [0x60, ...vec([...Array<number[]>(8).fill([I32]), ...Array<number[]>(7).fill([F64])]), ...vec([[F64]])];
  const body = (b: number[]): number[] => [...uleb(b.length), ...b];
  const bytes = [
    ...HEADER,
    ...section(1, vec([hType, vType])),
    ...section(3, vec([[0], [1]])),
    ...section(5, vec([[0x00, 1]])),
    ...section(7, vec([
      [...name('memory'), 0x02, 0],
      [...name('hpass'), 0x00, 0],
      [...name('vpass'), 0x00, 1],
    ])),
    ...section(10, vec([body(hpassBody()), body(vpassBody())])),
  ];
  return Uint8Array.from(bytes);
}

let kernels: SignificanceKernels | null | undefined;

/** This thread's kernels (compiled on first use), or null where WebAssembly SIMD is unavailable. */
export function significanceKernels(): SignificanceKernels | null {
  if (kernels !== undefined) return kernels;
  try {
    const e = instantiate(moduleBytes()) as unknown as SignificanceKernels;
    kernels = { memory: e.memory, hpass: e.hpass, vpass: e.vpass };
  } catch {
    kernels = null;
  }
  return kernels;
}
