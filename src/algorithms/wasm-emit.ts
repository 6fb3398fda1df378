// A few helpers to emit WebAssembly modules from TypeScript (the kernels in *-wasm.ts): opcodes,
// LEB128, sections, and synchronous instantiation. Only what those kernels use; no toolchain.
// Invariant: emitted modules import nothing and export one memory plus their functions.

// Opcodes used (core and the 0xFD SIMD prefix).
export const I32 = 0x7f;
export const F64 = 0x7c;
export const V128 = 0x7b;
export const LOCAL_GET = 0x20;
export const LOCAL_SET = 0x21;
export const LOCAL_TEE = 0x22;
export const I32_CONST = 0x41;
export const I32_ADD = 0x6a;
export const I32_AND = 0x71;
export const I32_SHL = 0x74;
export const I32_GE_U = 0x4f;
export const I32_LT_U = 0x49;
export const F64_CONST = 0x44;
export const F64_ADD = 0xa0;
export const F64_SUB = 0xa1;
export const F64_MUL = 0xa2;
export const F64_GT = 0x64;
export const F64_PROMOTE_F32 = 0xbb;
export const F32_DEMOTE_F64 = 0xb6;
export const F32_LOAD = 0x2a;
export const F32_STORE = 0x38;
export const BLOCK = 0x02;
export const LOOP = 0x03;
export const IF = 0x04;
export const BR = 0x0c;
export const BR_IF = 0x0d;
export const END = 0x0b;
export const SELECT = 0x1b;
export const VOID = 0x40;
export const SIMD = 0xfd;
export const V128_LOAD64_ZERO = 0x5d;
export const V128_STORE64_LANE = 0x5b;
export const F64X2_SPLAT = 0x14;
export const F64X2_EXTRACT = 0x21;
export const F64X2_REPLACE = 0x22;
export const F64X2_ADD = 0xf0;
export const F64X2_SUB = 0xf1;
export const F64X2_MUL = 0xf2;
export const F64X2_PMAX = 0xf7;
export const F64X2_LT = 0x49;
export const V128_CONST = 0x0c;
export const V128_AND = 0x4e;
export const I64X2_ALL_TRUE = 0xc3;
export const F64_LT = 0x63;
export const F32X4_DEMOTE = 0x5e;
export const F64X2_PROMOTE = 0x5f;

export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

export const f64Bytes = (v: number): number[] => [...new Uint8Array(Float64Array.of(v).buffer)];
export const simd = (op: number): number[] => [SIMD, ...uleb(op)];
export const get = (i: number): number[] => [LOCAL_GET, ...uleb(i)];
export const set = (i: number): number[] => [LOCAL_SET, ...uleb(i)];
export const tee = (i: number): number[] => [LOCAL_TEE, ...uleb(i)];
/** Memory argument: alignment 4 bytes (2^2; the rows are f32 arrays), constant offset. */
export const mem = (offset: number): number[] => [2, ...uleb(offset)];
/** Two f32 at address (on the stack) + offset, widened to f64x2. */
export const load2 = (offset: number): number[] => [...simd(V128_LOAD64_ZERO), ...mem(offset), ...simd(F64X2_PROMOTE)];
export const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
export const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
export const name = (s: string): number[] => vec([...s].map((ch) => [ch.charCodeAt(0)]));

/** The part of WebAssembly's API used here (the compiler's libraries here do not declare it). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
}

/** Magic and version of a module. */
export const HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];

/** Compiles and instantiates a module synchronously (small modules: microseconds); its exports. Throws where unsupported. */
export function instantiate(bytes: Uint8Array): Record<string, unknown> {
  const wa = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
  return new wa.Instance(new wa.Module(bytes)).exports;
}

// Scalar opcodes of the selection kernel (select-wasm.ts).
export const F32 = 0x7d;
export const I32_SUB = 0x6b;
export const I32_SHR_U = 0x76;
export const I32_EQZ = 0x45;
export const I32_LE_S = 0x4c;
export const I32_GT_S = 0x4a;
export const I32_GE_S = 0x4e;
export const F32_CONST = 0x43;
export const F32_LT = 0x5d;
export const F32_GT = 0x5e;
export const F64_DIV = 0xa3;
export const RETURN = 0x0f;

export const f32Bytes = (v: number): number[] => [...new Uint8Array(Float32Array.of(v).buffer)];
