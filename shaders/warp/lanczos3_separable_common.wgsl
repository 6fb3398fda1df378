// warp/lanczos3_separable_common: declarations both passes of the separable Lanczos-3 warp
// (lanczos3_rows.wgsl, lanczos3_cols.wgsl) share, spliced into each by its `//!include` line
// (src/gpu/shaders.ts): the one uniform block both passes bind at @binding(0) (one layout:
// src/gpu/kernels/warp.ts), the 7-tap window placement, the snapped split of a fixed-point
// position and the intermediate's block base, with the fixed-point arithmetic (fixed_point.wgsl)
// and the tap weights (lanczos3_taps.wgsl) they build on. No entry point; bindings 1.. are each
// pass's own.
// 64-bit fixed point: value = hi·2^32 + lo (in units of 2^-32 px), as in lanczos3.wgsl.
//!include warp/fixed_point.wgsl

// Both passes share this block (one struct, one uniform layout: src/gpu/kernels/warp.ts).
// (vec2u words: x = hi as i32 bits, y = lo.)
struct Params {
  d00: vec2u, d01: vec2u, d02: vec2u,   // 2-D displacement (dx, dy) = D · (x, y, 1), as lanczos3.wgsl
  d10: vec2u, d11: vec2u, d12: vec2u,
  e00: vec2u, e01: vec2u, e02: vec2u,   // row pass: u − x = e00·x + e01·(v + 8) + e02 on source row v
  e_pad: vec2u,
  min_weight: f32,                 // least finite-tap weight sum for a value
  clamp_mode: u32,                 // 0 off, 1 undershoot, 2 range
  width: u32,                      // output width (= intermediate and output row stride)
  y0: u32,                         // first output row of the band (full-image row)
  rows: u32,                       // output rows in the band
  src_width: u32,                  // source width (= source band row stride)
  src_height: u32,                 // full source height
  src_y0: u32,                     // first source row held in `src`
  src_rows: u32,                   // source rows held in `src`
  irows: u32,                      // intermediate rows per column
  ln_nx: u32,                      // LN = 1 (column pass): the grid's nodes per row and node
  ln_ny: u32,                      //   rows (node (i, j) at (ln_x0 + i·ln_dx, ln_y0 + j·ln_dy)),
  ln_first_piece: i32,             //   the band's first linear piece of the y axis and its
  ln_pieces: u32,                  //   pieces (src/cpu/ln-apply.ts lnPiece, lnColumnTable)
  ln_x0: f32,
  ln_dx: f32,
  ln_y0: f32,
  ln_dy: f32,
}

@group(0) @binding(0) var<uniform> params: Params;

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

const T_UNIT: f32 = 5.9604644775390625e-8; // 2^-24
const BIG: f32 = 3.40282346638528859812e+38; // f32 max: stands in for a dropped tap in min/max

fn nan() -> f32 {
  return bitcast<f32>(NAN_BITS);
}

//!include warp/lanczos3_taps.wgsl

// Six tap weights placed at window positions shift .. shift+5 of 7 (a: 0..3, b: 4..6).
struct W7 {
  a: vec4f,
  b: vec3f,
}

fn place(w: Taps, shift: bool) -> W7 {
  return W7(select(vec4f(w.lo, w.hi.x), vec4f(0.0, w.lo), shift), select(vec3f(w.hi.yz, 0.0), w.hi, shift));
}

fn dot7(w: W7, v: vec4f, u: vec3f) -> f32 {
  return dot(w.a, v) + dot(w.b, u);
}

// Integer part and fraction (units of 2^-24) of a fixed-point displacement, snapped to the
// integer within 2^-20 (= 16 units).
fn split_snap(d: Fix) -> vec2i {
  let k = i32(d.lo >> 8u);
  let up = k >= (1 << 24u) - 16;
  return vec2i(select(d.hi, d.hi + 1, up), select(select(k, 0, k < 16), 0, up));
}

// First source row held for the 8-column block from xb: two rows above the lowest snapped
// floor(sy) of the block's columns on output row y0 (the extremes of an affine map are at the
// block's ends). Both passes index the intermediate from it.
fn block_base(xb: u32) -> i32 {
  let xe = min(xb + 7u, params.width - 1u);
  let c = fix_add(fix_mul(fix(params.d11), params.y0), fix(params.d12));
  let a = split_snap(fix_add(fix_mul(fix(params.d10), xb), c)).x;
  let b = split_snap(fix_add(fix_mul(fix(params.d10), xe), c)).x;
  return i32(params.y0) + min(a, b) - 2;
}

