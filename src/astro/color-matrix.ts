// Applying a colour matrix to planar RGB data: out_c = Σ_j M[c][j] · in_j per pixel, optionally
// relative to a per-channel background (out_c = Σ_j M[c][j] · (in_j − bg_j) + target_c), which is
// how PCC neutralises the sky while calibrating star colours. A diagonal matrix is the PCC
// result; a full 3×3 comes from the REST API (user matrices, older PCC versions).
//
// Invariants: the input is never modified; non-finite samples stay non-finite (NaN = no data);
// the matrix is validated (3×3 or three finite numbers) before any pixel work.

import { PccError, throwIfAborted } from './pcc-errors.js';

export type Matrix3 = [[number, number, number], [number, number, number], [number, number, number]];

/** A 3×3 matrix from a 3×3 array or a diagonal triple; PCC_BAD_MATRIX otherwise. */
export function toMatrix3(m: unknown): Matrix3 {
  const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  if (Array.isArray(m) && m.length === 3 && m.every(finite)) {
    const [a, b, c] = m as number[];
    return [
      [a!, 0, 0],
      [0, b!, 0],
      [0, 0, c!],
    ];
  }
  if (Array.isArray(m) && m.length === 3 && m.every((row) => Array.isArray(row) && row.length === 3 && row.every(finite))) {
    const r = m as number[][];
    return [
      [r[0]![0]!, r[0]![1]!, r[0]![2]!],
      [r[1]![0]!, r[1]![1]!, r[1]![2]!],
      [r[2]![0]!, r[2]![1]!, r[2]![2]!],
    ];
  }
  throw new PccError('PCC_BAD_MATRIX', 'matrix must be 3×3 finite numbers ([[..],[..],[..]]) or a diagonal of 3 finite numbers');
}

export function isDiagonal(m: Matrix3): boolean {
  return m[0][1] === 0 && m[0][2] === 0 && m[1][0] === 0 && m[1][2] === 0 && m[2][0] === 0 && m[2][1] === 0;
}

export interface ApplyOptions {
  /** Per-channel level subtracted before the matrix (default 0). */
  background?: [number, number, number];
  /** Per-channel level added after the matrix (default 0). */
  target?: [number, number, number];
  signal?: AbortSignal;
}

/** New planar RGB array (length 3n) with the matrix applied. */
export function applyMatrix(data: Float32Array, n: number, m: Matrix3, o: ApplyOptions = {}): Float32Array {
  if (data.length !== 3 * n) throw new PccError('PCC_NOT_RGB', `expected ${3 * n} samples (3 planes), got ${data.length}`);
  const bg = o.background ?? [0, 0, 0];
  const tg = o.target ?? [0, 0, 0];
  const out = new Float32Array(3 * n);
  const r = data.subarray(0, n);
  const g = data.subarray(n, 2 * n);
  const b = data.subarray(2 * n, 3 * n);
  // Rows in chunks so a long image can be cancelled between them.
  const CHUNK = 1 << 20;
  for (let c = 0; c < 3; c++) {
    const row = m[c]!;
    const [m0, m1, m2] = row;
    const off = tg[c]! - m0 * bg[0] - m1 * bg[1] - m2 * bg[2];
    const dst = out.subarray(c * n, (c + 1) * n);
    for (let s = 0; s < n; s += CHUNK) {
      throwIfAborted(o.signal);
      const e = Math.min(n, s + CHUNK);
      if (m1 === 0 && m2 === 0 && c === 0) for (let i = s; i < e; i++) dst[i] = m0 * r[i]! + off;
      else if (m0 === 0 && m2 === 0 && c === 1) for (let i = s; i < e; i++) dst[i] = m1 * g[i]! + off;
      else if (m0 === 0 && m1 === 0 && c === 2) for (let i = s; i < e; i++) dst[i] = m2 * b[i]! + off;
      else for (let i = s; i < e; i++) dst[i] = m0 * r[i]! + m1 * g[i]! + m2 * b[i]! + off;
    }
  }
  return out;
}
