// A column window of a band of frame slots, packed: the TypeScript reference of
// shaders/stack/gather_window.wgsl (src/gpu/kernels/gather-window.ts), which STACKING's host
// pre-mask uses to bring many frames' slots back window by window. Exact copies.

export interface WindowSpec {
  /** Frames of the band and rows per frame slot; the band's width. */
  frames: number;
  slotRows: number;
  width: number;
  /** The window: rows [y0, y0 + rows) x columns [x0, x0 + cols) of every frame's slot. */
  y0: number;
  rows: number;
  x0: number;
  cols: number;
}

/** Throws unless the window lies inside the band and both arrays are large enough. */
export function checkWindow(s: WindowSpec, srcLength: number, dstLength: number): void {
  const ints = [s.frames, s.slotRows, s.width, s.y0, s.rows, s.x0, s.cols];
  if (ints.some((v) => !Number.isInteger(v) || v < 0)) throw new RangeError(`gather window: non-integer or negative geometry ${JSON.stringify(s)}`);
  if (s.y0 + s.rows > s.slotRows || s.x0 + s.cols > s.width) throw new RangeError(`gather window: rows ${s.y0}+${s.rows} x cols ${s.x0}+${s.cols} outside a ${s.slotRows} x ${s.width} slot`);
  if (srcLength < s.frames * s.slotRows * s.width) throw new RangeError(`gather window: source of ${srcLength} values for ${s.frames} slots of ${s.slotRows} x ${s.width}`);
  if (dstLength < s.frames * s.rows * s.cols) throw new RangeError(`gather window: target of ${dstLength} values for ${s.frames} x ${s.rows} x ${s.cols}`);
}

/** dst[(f·rows + r)·cols + x] = src[(f·slotRows + y0 + r)·width + x0 + x]. */
export function gatherWindow(src: Float32Array, s: WindowSpec, dst: Float32Array): Float32Array {
  checkWindow(s, src.length, dst.length);
  for (let f = 0; f < s.frames; f++) {
    for (let r = 0; r < s.rows; r++) {
      const from = (f * s.slotRows + s.y0 + r) * s.width + s.x0;
      dst.set(src.subarray(from, from + s.cols), (f * s.rows + r) * s.cols);
    }
  }
  return dst;
}
