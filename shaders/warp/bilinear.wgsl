// warp/bilinear: affine bilinear resampling of a band of source rows into a band of output rows
// (registration, the fast option). Output pixel (x, y0 + row) samples the source at
// (x, y) + (dx, dy) with (dx, dy) = D · (x, y, 1), D = A − [I | 0] in fixed point (see Fix); the contract and its
// TypeScript reference are in src/cpu/warp.ts, the wrapper in src/gpu/kernels/warp.ts.
// Bindings: 0 uniform Params; 1 read-only array<f32> source band (src_rows full-width rows from
//           src_y0, row-major; must cover sourceRowsFor()); 2 read_write array<f32> output band
//           (rows × width, row-major).
// Workgroup: WG x 1 x 1, PX adjacent output pixels per invocation (4 px with WG = 256 was the
//            fastest bilinear shape on llvmpipe); grid x = ⌈width / (PX·WG)⌉, y = rows.
// Precision: the source position is exact fixed point (32 fractional bits, fraction kept to
//            2^-24), identical on every device and in the reference; interpolation in f32.
//            Branch-free: llvmpipe runs every branch under a lane mask, so there is one path.
// No-data: NaN where sx ∉ [0, W−1] or sy ∉ [0, H−1] (no extrapolation). Non-finite taps are
//          dropped and the result renormalised over the rest if their weight sum >= min_weight,
//          else NaN. The result never leaves its 2×2 range: no clamping.

// 64-bit fixed point: value = hi·2^32 + lo (in units of 2^-32 px). Integer arithmetic keeps the
// source position bit-identical on every device and in the TypeScript reference.
//!include warp/fixed_point.wgsl

// The displacement (dx, dy) = D · (x, y, 1) in fixed point with 32 fractional bits, each
// coefficient as (hi: i32, lo: u32) words, value = hi + lo·2^-32 (see src/cpu/warp.ts).
// (vec2u words: x = hi as i32 bits, y = lo; a struct member would be padded to 16 bytes.)
struct Params {
  d00: vec2u, d01: vec2u, d02: vec2u,
  d10: vec2u, d11: vec2u, d12: vec2u,
  min_weight: f32,                 // least finite-tap weight sum for a value
  clamp_mode: u32,                 // unused by bilinear (same block as lanczos3)
  width: u32,                      // output width (= output band row stride)
  y0: u32,                         // first output row of the band (full-image row)
  rows: u32,                       // output rows in the band
  src_width: u32,                  // source width (= source band row stride)
  src_height: u32,                 // full source height
  src_y0: u32,                     // first source row held in `src`
  src_rows: u32,                   // source rows held in `src`
  flip: u32,                       // unused by bilinear
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

override WG: u32 = 256;
override PX: u32 = 4;

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

const T_UNIT: f32 = 5.9604644775390625e-8; // 2^-24

fn is_finite4(v: vec4f) -> vec4<bool> {
  // Bit test: NaN comparisons may be folded away by the driver's compiler.
  return (bitcast<vec4u>(v) & vec4u(0x7f800000u)) != vec4u(0x7f800000u);
}

fn sample(x: u32, y: u32, cx: Fix, cy: Fix) -> f32 {
  let W = i32(params.src_width);
  let H = i32(params.src_height);
  let dx = fix_add(fix_mul(fix(params.d00), x), cx);
  let dy = fix_add(fix_mul(fix(params.d10), x), cy);
  // Fraction: the top 24 fractional bits, exact in f32.
  let tx = f32(dx.lo >> 8u) * T_UNIT;
  let ty = f32(dy.lo >> 8u) * T_UNIT;
  let flx = dx.hi;
  let fly = dy.hi;
  let ix = i32(x) + flx;
  let iy = i32(y) + fly;
  let outside = ix < 0 || iy < 0 || ix > W - 1 || iy > H - 1 || (ix == W - 1 && tx > 0.0) || (iy == H - 1 && ty > 0.0);
  // The last column/row samples with fraction 1 from the one before (same value, no extrapolation).
  let x0 = clamp(ix, 0, max(W, 2) - 2);
  let r0 = clamp(iy, 0, max(H, 2) - 2);
  let ux = f32(ix - x0) + tx;
  let uy = f32(iy - r0) + ty;
  let x1 = min(x0 + 1, W - 1);
  let r1 = min(r0 + 1, H - 1);
  let vx = 1.0 - ux;
  let vy = 1.0 - uy;
  // Rows clamped to the band keep outside samples' loads in bounds (their result is NaN anyway).
  let band0 = i32(params.src_y0);
  let last = max(band0 + i32(params.src_rows) - 1, band0);
  let b0 = (clamp(r0, band0, last) - band0) * W;
  let b1 = (clamp(r1, band0, last) - band0) * W;
  let p = vec4f(src[u32(b0 + x0)], src[u32(b0 + x1)], src[u32(b1 + x0)], src[u32(b1 + x1)]);
  let ok = is_finite4(p);
  let w = vec4f(vx * vy, ux * vy, vx * uy, ux * uy);
  let v = vy * (vx * p.x + ux * p.y) + uy * (vx * p.z + ux * p.w);
  // Dropped taps: renormalise over the finite ones.
  let wok = select(vec4f(0.0), w, ok);
  let wsum = wok.x + wok.y + wok.z + wok.w;
  let renorm = dot(wok, select(vec4f(0.0), p, ok)) / wsum;
  let all_ok = all(ok);
  let r = select(renorm, v, all_ok);
  return select(r, bitcast<f32>(NAN_BITS), outside || (!all_ok && !(wsum >= params.min_weight)));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.y;
  if (row >= params.rows) {
    return;
  }
  let y = params.y0 + row;
  let cx = fix_add(fix_mul(fix(params.d01), y), fix(params.d02));
  let cy = fix_add(fix_mul(fix(params.d11), y), fix(params.d12));
  let first = gid.x * PX;
  let out_row = row * params.width;
  for (var k = 0u; k < PX; k++) {
    let x = first + k;
    if (x >= params.width) {
      return;
    }
    dst[out_row + x] = sample(x, y, cx, cy);
  }
}
