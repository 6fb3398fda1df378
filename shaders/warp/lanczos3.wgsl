// warp/lanczos3: affine Lanczos-3 resampling of a band of source rows into a band of output rows
// (registration). Output pixel (x, y0 + row) samples the source at (x, y) + (dx, dy) with
// (dx, dy) = D · (x, y, 1), D = A − [I | 0] in fixed point (see Fix); the contract and its
// TypeScript reference are in src/cpu/warp.ts, the wrapper in src/gpu/kernels/warp.ts.
// Bindings: 0 uniform Params; 1 read-only array<f32> source band (src_rows full-width rows from
//           src_y0, row-major; must cover sourceRowsFor()); 2 read_write array<f32> output band
//           (rows × width, row-major); 3 read-only array<vec2f> local-normalization row table
//           (LN = 1: the frame's node grid already interpolated to each output row,
//           ln_rows × ln_nx (a, b), row 0 = image row ln_row0: src/cpu/ln-apply.ts lnRowTable;
//           LN = 0: any buffer, unread).
// LN = 1, 2: each output value v is stored as a·v + b, a and b interpolated between the row's
//         nodes by ln_apply.wgsl's rule (src/cpu/ln-apply.ts), so local normalization costs no
//         pass of its own over the band (NaN stays NaN). LN = 1 (the wrapper's choice when node
//         spacing ln_dx >= GROUP): a group's pixels lie within two adjacent node intervals, so
//         the group loads the row's three nodes around it once and each pixel selects its pair
//         by the same rule (no load per pixel: on llvmpipe each lane's load is a scalar loop
//         step, and a per-pixel fallback under a branch would run always). LN = 2 (finer
//         grids): each pixel looks its pair up.
// Workgroup: WG x 1 x 1; grid x = ⌈width / (GROUP·WG)⌉, y = rows. Three shapes, chosen by the
//            override GROUP (dead code is removed at pipeline creation: llvmpipe runs every
//            branch of a shader under a lane mask, so a runtime fallback would cost always):
//   GROUP = 8: 8 adjacent output pixels per invocation read one shared 7-row × 14-column
//              window (98 loads instead of 8 × 36; on llvmpipe each lane's load is a scalar
//              loop step, so loads dominate: ~15 % less CPU than GROUP = 4 at 2048 px wide).
//              Valid when the 8 pixels' footprints sit within one row and one column of each
//              other: 7·|a00 − 1| < 1 (or 7·|a00 + 1| < 1 with flip = 1) and 7·|a10| < 1.
//   GROUP = 4: the same with 4 pixels and a 7 × 10 window; valid for 3·|a00 ∓ 1| < 1 and
//              3·|a10| < 1. The wrapper picks the widest valid group on the host (exactly:
//              positions are fixed point); a violation that slipped through would yield NaN,
//              never wrong values. Pixel k + 1's position is pixel k's plus (d00, d10) (minus
//              with flip), added exactly in fixed point, so all shapes give identical positions
//              (the f32 results of groups of 8 and 4 agree to rounding: test/gpu/warp.test.ts).
//   GROUP = 1: one pixel per invocation, any transform.
// Precision: the source position is exact fixed point (32 fractional bits, fraction kept to
//            2^-24), identical on every device and in the reference; weights and sums in f32.
//            Weights: 2 trig calls per axis via sin π(t−k) = (−1)^k sin πt and
//            sin(π(t−k)/3) = sin a·cos(kπ/3) − cos a·sin(kπ/3); the common factor sin(πt)/t cancels
//            in the normalisation. Fractions within 2^-20 of an integer snap to it (exact delta).
// No-data: NaN where the sample's nearest pixel is outside the source (sx ∉ [−0.5, W−0.5) or
//          sy ∉ [−0.5, H−0.5)). Taps beyond the image edge get weight 0 (each axis renormalised)
//          and read the clamped edge pixel, so loads stay in bounds. Non-finite taps are dropped
//          and the result renormalised over the rest if their weight sum >= min_weight, else NaN.
//          Deringing: clamp_mode 1 = not below the 2×2 nearest finite pixels' minimum,
//          2 = also not above their maximum, 0 = off.

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
  clamp_mode: u32,                 // 0 off, 1 undershoot, 2 range
  width: u32,                      // output width (= output band row stride)
  y0: u32,                         // first output row of the band (full-image row)
  rows: u32,                       // output rows in the band
  src_width: u32,                  // source width (= source band row stride)
  src_height: u32,                 // full source height
  src_y0: u32,                     // first source row held in `src`
  src_rows: u32,                   // source rows held in `src`
  flip: u32,                       // GROUP >= 4 only: 1 takes each group's pixels right to left
  ln_nx: u32,                      // LN = 1: nodes per row (node i at x = ln_x0 + i·ln_dx)
  ln_rows: u32,                    //         rows of the row table, from image row ln_row0
  ln_row0: u32,
  ln_pad0: u32,
  ln_x0: f32,
  ln_dx: f32,
  ln_pad1: f32,
  ln_pad2: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

override WG: u32 = 256;
override GROUP: u32 = 4;
override LN: u32 = 0;

@group(0) @binding(3) var<storage, read> ln_coef: array<vec2<f32>>;

// Local normalization's node index and weight along one axis (ln_axis).
//!include stack/ln_axis.wgsl

// (a, b) of the local normalization at pixel (x, y): the row's two nodes around x, mixed.
fn ln_at(x: u32, y: u32) -> vec2<f32> {
  let ax = ln_axis(f32(x), params.ln_x0, params.ln_dx, params.ln_nx);
  let i0 = u32(ax.x);
  let i1 = min(i0 + 1u, params.ln_nx - 1u);
  let r = min(y - params.ln_row0, params.ln_rows - 1u) * params.ln_nx;
  return mix(ln_coef[r + i0], ln_coef[r + i1], ax.y);
}

// Stores output value v of pixel (x, y) at dst[i], locally normalised when LN != 0.
fn put(i: u32, x: u32, y: u32, v: f32) {
  if (LN == 0u) {
    dst[i] = v;
    return;
  }
  let ab = ln_at(x, y);
  dst[i] = ab.x * v + ab.y;
}

// A group's pixels from x0 on row y (LN = 1: at most two node intervals, see the head
// comment): the row's nodes i, i + 1, i + 2 around x0 (clamped to the grid), loaded once.
struct LnSpan {
  n0: vec2<f32>,
  n1: vec2<f32>,
  n2: vec2<f32>,
  i: u32,
  y: u32,
}

fn ln_span(x0: u32, y: u32) -> LnSpan {
  if (LN != 1u) {
    return LnSpan(vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 0.0), 0u, y);
  }
  let i = u32(ln_axis(f32(x0), params.ln_x0, params.ln_dx, params.ln_nx).x);
  let last = params.ln_nx - 1u;
  let r = min(y - params.ln_row0, params.ln_rows - 1u) * params.ln_nx;
  return LnSpan(ln_coef[r + i], ln_coef[r + min(i + 1u, last)], ln_coef[r + min(i + 2u, last)], i, y);
}

// put() for a pixel of a group whose nodes were loaded once (ln_span): the pixel's node pair is
// (n0, n1) or (n1, n2), mixed by its weight as ln_at mixes them.
fn put_span(i: u32, x: u32, sp: LnSpan, v: f32) {
  if (LN == 0u) {
    dst[i] = v;
    return;
  }
  var ab: vec2<f32>;
  if (LN == 1u) {
    let ax = ln_axis(f32(x), params.ln_x0, params.ln_dx, params.ln_nx);
    let next = u32(ax.x) != sp.i;
    ab = mix(select(sp.n0, sp.n1, next), select(sp.n1, sp.n2, next), ax.y);
  } else {
    ab = ln_at(x, sp.y);
  }
  dst[i] = ab.x * v + ab.y;
}

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

const T_UNIT: f32 = 5.9604644775390625e-8; // 2^-24
const BIG: f32 = 3.40282346638528859812e+38; // f32 max: stands in for a dropped tap in min/max

fn is_finite(v: f32) -> bool {
  // Bit test: NaN comparisons may be folded away by the driver's compiler.
  return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn is_finite4(v: vec4f) -> vec4<bool> {
  return (bitcast<vec4u>(v) & vec4u(0x7f800000u)) != vec4u(0x7f800000u);
}

fn nan() -> f32 {
  return bitcast<f32>(NAN_BITS);
}

//!include warp/lanczos3_taps.wgsl

struct Pos {
  ix: i32,     // floor of the sample position
  iy: i32,
  tx: f32,     // fraction in [0, 1)
  ty: f32,
  inside: bool, // nearest pixel inside the source
}

// Integer part and fraction (units of 2^-24) of a fixed-point displacement, snapped to the
// integer within 2^-20 (= 16 units).
fn split_snap(d: Fix) -> vec2i {
  let k = i32(d.lo >> 8u);
  let up = k >= (1 << 24u) - 16;
  return vec2i(select(d.hi, d.hi + 1, up), select(select(k, 0, k < 16), 0, up));
}

// The displacement D · (x, y, 1) of output pixel (x, y), both axes, in fixed point.
struct Disp {
  dx: Fix,
  dy: Fix,
}

fn disp_at(x: u32, y: u32) -> Disp {
  let dx = fix_add(fix_mul(fix(params.d00), x), fix_add(fix_mul(fix(params.d01), y), fix(params.d02)));
  let dy = fix_add(fix_mul(fix(params.d10), x), fix_add(fix_mul(fix(params.d11), y), fix(params.d12)));
  return Disp(dx, dy);
}

// −a in fixed point (two's complement of the 64-bit value).
fn fix_neg(a: Fix) -> Fix {
  return Fix(-a.hi - select(0, 1, a.lo != 0u), ~a.lo + 1u);
}

// The displacement step from one pixel of a group to the next: +(d00, d10) per column, or
// −(d00, d10) when the group is taken right to left. Adding it is exact (integer arithmetic), so
// positions stepped this way are bit-identical to disp_at of each pixel.
fn disp_step(flip: bool) -> Disp {
  let dx = fix(params.d00);
  let dy = fix(params.d10);
  let nx = fix_neg(dx);
  let ny = fix_neg(dy);
  return Disp(Fix(select(dx.hi, nx.hi, flip), select(dx.lo, nx.lo, flip)), Fix(select(dy.hi, ny.hi, flip), select(dy.lo, ny.lo, flip)));
}

fn disp_add(a: Disp, b: Disp) -> Disp {
  return Disp(fix_add(a.dx, b.dx), fix_add(a.dy, b.dy));
}

fn pos_of(d: Disp, x: u32, y: u32) -> Pos {
  let dx = split_snap(d.dx);
  let dy = split_snap(d.dy);
  let tx = f32(dx.y) * T_UNIT;
  let ty = f32(dy.y) * T_UNIT;
  let ix = i32(x) + dx.x;
  let iy = i32(y) + dy.x;
  let nx = ix + select(0, 1, tx >= 0.5);
  let ny = iy + select(0, 1, ty >= 0.5);
  let inside = nx >= 0 && nx < i32(params.src_width) && ny >= 0 && ny < i32(params.src_height);
  return Pos(ix, iy, tx, ty, inside);
}

fn position(x: u32, y: u32) -> Pos {
  return pos_of(disp_at(x, y), x, y);
}

fn deringed(v: f32, lo: f32, hi: f32) -> f32 {
  // lo > hi (no finite 2×2 pixel) leaves v alone.
  var r = v;
  if (params.clamp_mode >= 1u && lo <= hi) {
    r = max(r, lo);
  }
  if (params.clamp_mode == 2u && lo <= hi) {
    r = min(r, hi);
  }
  return r;
}

// Final value from the sum over finite taps and the weight of the dropped ones.
fn resolve(acc: f32, miss: f32, lo: f32, hi: f32) -> f32 {
  // Weights sum to 1, so the finite taps weigh 1 − miss; exactly acc when nothing was dropped.
  let wsum = 1.0 - miss;
  if (miss != 0.0 && !(wsum >= params.min_weight)) {
    return nan();
  }
  return deringed(select(acc / wsum, acc, miss == 0.0), lo, hi);
}

// ---------------------------------------------------------------------------------------------
// GROUP = 1: one pixel, any transform.

// One footprint row (clamped columns): (Σ w·v over finite v, Σ w over non-finite v, v2, v3) with
// v2, v3 the row's two nearest pixels.
fn row6(rb: u32, clo: vec3u, chi: vec3u, w: Taps) -> vec4f {
  let vlo = vec3f(src[rb + clo.x], src[rb + clo.y], src[rb + clo.z]);
  let vhi = vec3f(src[rb + chi.x], src[rb + chi.y], src[rb + chi.z]);
  let oklo = (bitcast<vec3u>(vlo) & vec3u(0x7f800000u)) != vec3u(0x7f800000u);
  let okhi = (bitcast<vec3u>(vhi) & vec3u(0x7f800000u)) != vec3u(0x7f800000u);
  let s = dot(w.lo, select(vec3f(0.0), vlo, oklo)) + dot(w.hi, select(vec3f(0.0), vhi, okhi));
  let m = dot(w.lo, select(vec3f(1.0), vec3f(0.0), oklo)) + dot(w.hi, select(vec3f(1.0), vec3f(0.0), okhi));
  return vec4f(s, m, vlo.z, vhi.x);
}

fn single(x: u32, y: u32) -> f32 {
  let p = position(x, y);
  let W = i32(params.src_width);
  let wx = edge(lanczos3(p.tx), p.ix - 2, W);
  let wy = edge(lanczos3(p.ty), p.iy - 2, i32(params.src_height));
  // Clamped taps: an outside tap weighs 0 and reads the edge pixel, so memory stays in bounds
  // and the 2×2 range is exactly that of the in-image nearest pixels.
  let clo = vec3u(clamp(vec3i(p.ix - 2, p.ix - 1, p.ix), vec3i(0), vec3i(W - 1)));
  let chi = vec3u(clamp(vec3i(p.ix + 1, p.ix + 2, p.ix + 3), vec3i(0), vec3i(W - 1)));
  let band0 = i32(params.src_y0);
  let last = max(i32(params.src_rows) - 1, 0);
  let stride = params.src_width;
  let rlo = vec3u(clamp(vec3i(p.iy - 2, p.iy - 1, p.iy) - vec3i(band0), vec3i(0), vec3i(last))) * stride;
  let rhi = vec3u(clamp(vec3i(p.iy + 1, p.iy + 2, p.iy + 3) - vec3i(band0), vec3i(0), vec3i(last))) * stride;
  let r0 = row6(rlo.x, clo, chi, wx);
  let r1 = row6(rlo.y, clo, chi, wx);
  let r2 = row6(rlo.z, clo, chi, wx);
  let r3 = row6(rhi.x, clo, chi, wx);
  let r4 = row6(rhi.y, clo, chi, wx);
  let r5 = row6(rhi.z, clo, chi, wx);
  let acc = dot(wy.lo, vec3f(r0.x, r1.x, r2.x)) + dot(wy.hi, vec3f(r3.x, r4.x, r5.x));
  let miss = dot(wy.lo, vec3f(r0.y, r1.y, r2.y)) + dot(wy.hi, vec3f(r3.y, r4.y, r5.y));
  let near = vec4f(r2.z, r2.w, r3.z, r3.w);
  let ok = is_finite4(near);
  let lo4 = select(vec4f(BIG), near, ok);
  let hi4 = select(vec4f(-BIG), near, ok);
  let v = resolve(acc, miss, min(min(lo4.x, lo4.y), min(lo4.z, lo4.w)), max(max(hi4.x, hi4.y), max(hi4.z, hi4.w)));
  return select(nan(), v, p.inside);
}

// ---------------------------------------------------------------------------------------------
// GROUP = 4: four pixels sharing a 7 × 10 window.

// Six tap weights placed at window positions shift .. shift+5 of 7 (a: 0..3, b: 4..6).
struct W7 {
  a: vec4f,
  b: vec3f,
}

fn place(w: Taps, shift: bool) -> W7 {
  return W7(select(vec4f(w.lo, w.hi.x), vec4f(0.0, w.lo), shift), select(vec3f(w.hi.yz, 0.0), w.hi, shift));
}

// Per window row: per-pixel Σ w·v over finite v, Σ w over non-finite v, and the pixel's
// nearest-pair min and max (BIG / −BIG when both are non-finite).
struct Row4 {
  s: vec4f,
  m: vec4f,
  lo: vec4f,
  hi: vec4f,
}

fn dot7(w: W7, v: vec4f, u: vec3f) -> f32 {
  return dot(w.a, v) + dot(w.b, u);
}

fn row4(rb: u32, ca: vec4u, cb: vec4u, cc: vec2u, w0: W7, w1: W7, w2: W7, w3: W7, dx: vec4<bool>) -> Row4 {
  let a = vec4f(src[rb + ca.x], src[rb + ca.y], src[rb + ca.z], src[rb + ca.w]);
  let b = vec4f(src[rb + cb.x], src[rb + cb.y], src[rb + cb.z], src[rb + cb.w]);
  let c = vec2f(src[rb + cc.x], src[rb + cc.y]);
  let oka = is_finite4(a);
  let okb = is_finite4(b);
  let okc = (bitcast<vec2u>(c) & vec2u(0x7f800000u)) != vec2u(0x7f800000u);
  // Window values with dropped taps as 0 (sum), 1 (dropped weight), BIG / −BIG (range).
  let sa = select(vec4f(0.0), a, oka);
  let sb = select(vec4f(0.0), b, okb);
  let sc = select(vec2f(0.0), c, okc);
  let ma = select(vec4f(1.0), vec4f(0.0), oka);
  let mb = select(vec4f(1.0), vec4f(0.0), okb);
  let mc = select(vec2f(1.0), vec2f(0.0), okc);
  // Columns 0..9 = a.xyzw b.xyzw c.xy; pixel k covers columns k .. k+6.
  let s = vec4f(
    dot7(w0, sa, sb.xyz),
    dot7(w1, vec4f(sa.yzw, sb.x), vec3f(sb.yzw)),
    dot7(w2, vec4f(sa.zw, sb.xy), vec3f(sb.zw, sc.x)),
    dot7(w3, vec4f(sa.w, sb.xyz), vec3f(sb.w, sc.xy)));
  let m = vec4f(
    dot7(w0, ma, mb.xyz),
    dot7(w1, vec4f(ma.yzw, mb.x), vec3f(mb.yzw)),
    dot7(w2, vec4f(ma.zw, mb.xy), vec3f(mb.zw, mc.x)),
    dot7(w3, vec4f(ma.w, mb.xyz), vec3f(mb.w, mc.xy)));
  // Nearest pair of pixel k: columns k+2, k+3 (k+3, k+4 when shifted).
  let la = select(vec4f(BIG), a, oka);
  let lb = select(vec4f(BIG), b, okb);
  let ha = select(vec4f(-BIG), a, oka);
  let hb = select(vec4f(-BIG), b, okb);
  let l2 = vec4f(la.zw, lb.xy);   // columns 2..5
  let l3 = vec4f(la.w, lb.xyz);   // columns 3..6
  let l4 = lb;                    // columns 4..7
  let h2 = vec4f(ha.zw, hb.xy);
  let h3 = vec4f(ha.w, hb.xyz);
  let h4 = hb;
  let lo = select(min(l2, l3), min(l3, l4), dx);
  let hi = select(max(h2, h3), max(h3, h4), dx);
  return Row4(s, m, lo, hi);
}

fn group4(xb: u32, y: u32) {
  // Group slot k holds output column xb + k (xb + 3 − k with flip), so that the source
  // columns increase with k.
  let flip = params.flip == 1u;
  let xs = select(vec4u(xb, xb + 1u, xb + 2u, xb + 3u), vec4u(xb + 3u, xb + 2u, xb + 1u, xb), flip);
  let step = disp_step(flip);
  let d0 = disp_at(xs.x, y);
  let d1 = disp_add(d0, step);
  let d2 = disp_add(d1, step);
  let d3 = disp_add(d2, step);
  let p0 = pos_of(d0, xs.x, y);
  let p1 = pos_of(d1, xs.y, y);
  let p2 = pos_of(d2, xs.z, y);
  let p3 = pos_of(d3, xs.w, y);
  let W = i32(params.src_width);
  let H = i32(params.src_height);
  // Column offset of each footprint in the window (0 or 1) and row offset (0 or 1).
  let e = vec4i(p0.ix, p1.ix - 1, p2.ix - 2, p3.ix - 3);
  let e0 = min(min(e.x, e.y), min(e.z, e.w));
  let iy = vec4i(p0.iy, p1.iy, p2.iy, p3.iy);
  let iy0 = min(min(iy.x, iy.y), min(iy.z, iy.w));
  let dxo = e - vec4i(e0);
  let dyo = iy - vec4i(iy0);
  let fits = all(dxo <= vec4i(1)) && all(dyo <= vec4i(1));
  let dx = dxo == vec4i(1);
  let dy = dyo == vec4i(1);
  let w0 = place(edge(lanczos3(p0.tx), p0.ix - 2, W), dx.x);
  let w1 = place(edge(lanczos3(p1.tx), p1.ix - 2, W), dx.y);
  let w2 = place(edge(lanczos3(p2.tx), p2.ix - 2, W), dx.z);
  let w3 = place(edge(lanczos3(p3.tx), p3.ix - 2, W), dx.w);
  let v0 = edge(lanczos3(p0.ty), p0.iy - 2, H);
  let v1 = edge(lanczos3(p1.ty), p1.iy - 2, H);
  let v2 = edge(lanczos3(p2.ty), p2.iy - 2, H);
  let v3 = edge(lanczos3(p3.ty), p3.iy - 2, H);
  // Vertical weight of window row j per slot; a footprint one row lower uses rows 1..6.
  let u0 = vec4f(v0.lo.x, v1.lo.x, v2.lo.x, v3.lo.x);
  let u1 = vec4f(v0.lo.y, v1.lo.y, v2.lo.y, v3.lo.y);
  let u2 = vec4f(v0.lo.z, v1.lo.z, v2.lo.z, v3.lo.z);
  let u3 = vec4f(v0.hi.x, v1.hi.x, v2.hi.x, v3.hi.x);
  let u4 = vec4f(v0.hi.y, v1.hi.y, v2.hi.y, v3.hi.y);
  let u5 = vec4f(v0.hi.z, v1.hi.z, v2.hi.z, v3.hi.z);
  let zero = vec4f(0.0);
  // Window columns e0−2 .. e0+7 and rows iy0−2 .. iy0+4, clamped (outside taps weigh 0).
  let c0 = e0 - 2;
  let ca = vec4u(clamp(vec4i(c0, c0 + 1, c0 + 2, c0 + 3), vec4i(0), vec4i(W - 1)));
  let cb = vec4u(clamp(vec4i(c0 + 4, c0 + 5, c0 + 6, c0 + 7), vec4i(0), vec4i(W - 1)));
  let cc = vec2u(clamp(vec2i(c0 + 8, c0 + 9), vec2i(0), vec2i(W - 1)));
  let band0 = i32(params.src_y0);
  let last = max(i32(params.src_rows) - 1, 0);
  let stride = params.src_width;
  let r0 = iy0 - 2 - band0;
  let rows_a = vec4u(clamp(vec4i(r0, r0 + 1, r0 + 2, r0 + 3), vec4i(0), vec4i(last))) * stride;
  let rows_b = vec3u(clamp(vec3i(r0 + 4, r0 + 5, r0 + 6), vec3i(0), vec3i(last))) * stride;
  let q0 = row4(rows_a.x, ca, cb, cc, w0, w1, w2, w3, dx);
  let q1 = row4(rows_a.y, ca, cb, cc, w0, w1, w2, w3, dx);
  let q2 = row4(rows_a.z, ca, cb, cc, w0, w1, w2, w3, dx);
  let q3 = row4(rows_a.w, ca, cb, cc, w0, w1, w2, w3, dx);
  let q4 = row4(rows_b.x, ca, cb, cc, w0, w1, w2, w3, dx);
  let q5 = row4(rows_b.y, ca, cb, cc, w0, w1, w2, w3, dx);
  let q6 = row4(rows_b.z, ca, cb, cc, w0, w1, w2, w3, dx);
  let y0w = select(u0, zero, dy);
  let y1w = select(u1, u0, dy);
  let y2w = select(u2, u1, dy);
  let y3w = select(u3, u2, dy);
  let y4w = select(u4, u3, dy);
  let y5w = select(u5, u4, dy);
  let y6w = select(zero, u5, dy);
  let acc = y0w * q0.s + y1w * q1.s + y2w * q2.s + y3w * q3.s + y4w * q4.s + y5w * q5.s + y6w * q6.s;
  let miss = y0w * q0.m + y1w * q1.m + y2w * q2.m + y3w * q3.m + y4w * q4.m + y5w * q5.m + y6w * q6.m;
  // Nearest 2×2: window rows 2, 3 (3, 4 when shifted down).
  let lo = select(min(q2.lo, q3.lo), min(q3.lo, q4.lo), dy);
  let hi = select(max(q2.hi, q3.hi), max(q3.hi, q4.hi), dy);
  let inside = vec4<bool>(p0.inside, p1.inside, p2.inside, p3.inside) & vec4<bool>(fits);
  let out_row = (y - params.y0) * params.width;
  let res = vec4f(resolve(acc.x, miss.x, lo.x, hi.x), resolve(acc.y, miss.y, lo.y, hi.y), resolve(acc.z, miss.z, lo.z, hi.z), resolve(acc.w, miss.w, lo.w, hi.w));
  let out = select(vec4f(nan()), res, inside);
  let sp = ln_span(min(xs.x, xs.w), y);
  if (xs.x < params.width) {
    put_span(out_row + xs.x, xs.x, sp, out.x);
  }
  if (xs.y < params.width) {
    put_span(out_row + xs.y, xs.y, sp, out.y);
  }
  if (xs.z < params.width) {
    put_span(out_row + xs.z, xs.z, sp, out.z);
  }
  if (xs.w < params.width) {
    put_span(out_row + xs.w, xs.w, sp, out.w);
  }
}

// ---------------------------------------------------------------------------------------------
// GROUP = 8: eight pixels sharing a 7 × 14 window (98 loads instead of 2 × 70).

struct Row8 {
  s0: vec4f, s1: vec4f,
  m0: vec4f, m1: vec4f,
  lo0: vec4f, lo1: vec4f,
  hi0: vec4f, hi1: vec4f,
}

fn row8(rb: u32, ca: vec4u, cb: vec4u, cc: vec4u, cd: vec2u, w0: W7, w1: W7, w2: W7, w3: W7, w4: W7, w5: W7, w6: W7, w7: W7, dx0: vec4<bool>, dx1: vec4<bool>) -> Row8 {
  let a = vec4f(src[rb + ca.x], src[rb + ca.y], src[rb + ca.z], src[rb + ca.w]);
  let b = vec4f(src[rb + cb.x], src[rb + cb.y], src[rb + cb.z], src[rb + cb.w]);
  let c = vec4f(src[rb + cc.x], src[rb + cc.y], src[rb + cc.z], src[rb + cc.w]);
  let d = vec2f(src[rb + cd.x], src[rb + cd.y]);
  let oka = is_finite4(a);
  let okb = is_finite4(b);
  let okc = is_finite4(c);
  let okd = (bitcast<vec2u>(d) & vec2u(0x7f800000u)) != vec2u(0x7f800000u);
  let sa = select(vec4f(0.0), a, oka);
  let sb = select(vec4f(0.0), b, okb);
  let sc = select(vec4f(0.0), c, okc);
  let sd = select(vec2f(0.0), d, okd);
  let ma = select(vec4f(1.0), vec4f(0.0), oka);
  let mb = select(vec4f(1.0), vec4f(0.0), okb);
  let mc = select(vec4f(1.0), vec4f(0.0), okc);
  let md = select(vec2f(1.0), vec2f(0.0), okd);
  // Columns 0..13 = a.xyzw b.xyzw c.xyzw d.xy; pixel k covers columns k .. k+6.
  let s0 = vec4f(
    dot7(w0, vec4f(sa.x, sa.y, sa.z, sa.w), vec3f(sb.x, sb.y, sb.z)),
    dot7(w1, vec4f(sa.y, sa.z, sa.w, sb.x), vec3f(sb.y, sb.z, sb.w)),
    dot7(w2, vec4f(sa.z, sa.w, sb.x, sb.y), vec3f(sb.z, sb.w, sc.x)),
    dot7(w3, vec4f(sa.w, sb.x, sb.y, sb.z), vec3f(sb.w, sc.x, sc.y)));
  let s1 = vec4f(
    dot7(w4, vec4f(sb.x, sb.y, sb.z, sb.w), vec3f(sc.x, sc.y, sc.z)),
    dot7(w5, vec4f(sb.y, sb.z, sb.w, sc.x), vec3f(sc.y, sc.z, sc.w)),
    dot7(w6, vec4f(sb.z, sb.w, sc.x, sc.y), vec3f(sc.z, sc.w, sd.x)),
    dot7(w7, vec4f(sb.w, sc.x, sc.y, sc.z), vec3f(sc.w, sd.x, sd.y)));
  let m0 = vec4f(
    dot7(w0, vec4f(ma.x, ma.y, ma.z, ma.w), vec3f(mb.x, mb.y, mb.z)),
    dot7(w1, vec4f(ma.y, ma.z, ma.w, mb.x), vec3f(mb.y, mb.z, mb.w)),
    dot7(w2, vec4f(ma.z, ma.w, mb.x, mb.y), vec3f(mb.z, mb.w, mc.x)),
    dot7(w3, vec4f(ma.w, mb.x, mb.y, mb.z), vec3f(mb.w, mc.x, mc.y)));
  let m1 = vec4f(
    dot7(w4, vec4f(mb.x, mb.y, mb.z, mb.w), vec3f(mc.x, mc.y, mc.z)),
    dot7(w5, vec4f(mb.y, mb.z, mb.w, mc.x), vec3f(mc.y, mc.z, mc.w)),
    dot7(w6, vec4f(mb.z, mb.w, mc.x, mc.y), vec3f(mc.z, mc.w, md.x)),
    dot7(w7, vec4f(mb.w, mc.x, mc.y, mc.z), vec3f(mc.w, md.x, md.y)));
  // Nearest pair of pixel k: columns k+2, k+3 (k+3, k+4 when shifted).
  let la = select(vec4f(BIG), a, oka);
  let lb = select(vec4f(BIG), b, okb);
  let lc = select(vec4f(BIG), c, okc);
  let ha = select(vec4f(-BIG), a, oka);
  let hb = select(vec4f(-BIG), b, okb);
  let hc = select(vec4f(-BIG), c, okc);
  let lo0 = select(min(vec4f(la.z, la.w, lb.x, lb.y), vec4f(la.w, lb.x, lb.y, lb.z)), min(vec4f(la.w, lb.x, lb.y, lb.z), vec4f(lb.x, lb.y, lb.z, lb.w)), dx0);
  let hi0 = select(max(vec4f(ha.z, ha.w, hb.x, hb.y), vec4f(ha.w, hb.x, hb.y, hb.z)), max(vec4f(ha.w, hb.x, hb.y, hb.z), vec4f(hb.x, hb.y, hb.z, hb.w)), dx0);
  let lo1 = select(min(vec4f(lb.z, lb.w, lc.x, lc.y), vec4f(lb.w, lc.x, lc.y, lc.z)), min(vec4f(lb.w, lc.x, lc.y, lc.z), vec4f(lc.x, lc.y, lc.z, lc.w)), dx1);
  let hi1 = select(max(vec4f(hb.z, hb.w, hc.x, hc.y), vec4f(hb.w, hc.x, hc.y, hc.z)), max(vec4f(hb.w, hc.x, hc.y, hc.z), vec4f(hc.x, hc.y, hc.z, hc.w)), dx1);
  return Row8(s0, s1, m0, m1, lo0, lo1, hi0, hi1);
}

fn group8(xb: u32, y: u32) {
  let flip = params.flip == 1u;
  let xs0 = select(vec4u(xb, xb + 1u, xb + 2u, xb + 3u), vec4u(xb + 7u, xb + 6u, xb + 5u, xb + 4u), flip);
  let xs1 = select(vec4u(xb + 4u, xb + 5u, xb + 6u, xb + 7u), vec4u(xb + 3u, xb + 2u, xb + 1u, xb), flip);
  let step = disp_step(flip);
  let d0 = disp_at(xs0.x, y);
  let d1 = disp_add(d0, step);
  let d2 = disp_add(d1, step);
  let d3 = disp_add(d2, step);
  let d4 = disp_add(d3, step);
  let d5 = disp_add(d4, step);
  let d6 = disp_add(d5, step);
  let d7 = disp_add(d6, step);
  let p0 = pos_of(d0, xs0.x, y);
  let p1 = pos_of(d1, xs0.y, y);
  let p2 = pos_of(d2, xs0.z, y);
  let p3 = pos_of(d3, xs0.w, y);
  let p4 = pos_of(d4, xs1.x, y);
  let p5 = pos_of(d5, xs1.y, y);
  let p6 = pos_of(d6, xs1.z, y);
  let p7 = pos_of(d7, xs1.w, y);
  let W = i32(params.src_width);
  let H = i32(params.src_height);
  let e_0 = vec4i(p0.ix, p1.ix - 1, p2.ix - 2, p3.ix - 3);
  let e_1 = vec4i(p4.ix - 4, p5.ix - 5, p6.ix - 6, p7.ix - 7);
  let em = min(e_0, e_1);
  let e0 = min(min(em.x, em.y), min(em.z, em.w));
  let iy_0 = vec4i(p0.iy, p1.iy, p2.iy, p3.iy);
  let iy_1 = vec4i(p4.iy, p5.iy, p6.iy, p7.iy);
  let im = min(iy_0, iy_1);
  let iy0 = min(min(im.x, im.y), min(im.z, im.w));
  let dxo0 = e_0 - vec4i(e0);
  let dxo1 = e_1 - vec4i(e0);
  let dyo0 = iy_0 - vec4i(iy0);
  let dyo1 = iy_1 - vec4i(iy0);
  let fits = all(dxo0 <= vec4i(1)) && all(dxo1 <= vec4i(1)) && all(dyo0 <= vec4i(1)) && all(dyo1 <= vec4i(1));
  let dx0 = dxo0 == vec4i(1);
  let dx1 = dxo1 == vec4i(1);
  let dy0 = dyo0 == vec4i(1);
  let dy1 = dyo1 == vec4i(1);
  let w0 = place(edge(lanczos3(p0.tx), p0.ix - 2, W), dx0.x);
  let w1 = place(edge(lanczos3(p1.tx), p1.ix - 2, W), dx0.y);
  let w2 = place(edge(lanczos3(p2.tx), p2.ix - 2, W), dx0.z);
  let w3 = place(edge(lanczos3(p3.tx), p3.ix - 2, W), dx0.w);
  let w4 = place(edge(lanczos3(p4.tx), p4.ix - 2, W), dx1.x);
  let w5 = place(edge(lanczos3(p5.tx), p5.ix - 2, W), dx1.y);
  let w6 = place(edge(lanczos3(p6.tx), p6.ix - 2, W), dx1.z);
  let w7 = place(edge(lanczos3(p7.tx), p7.ix - 2, W), dx1.w);
  let v0 = edge(lanczos3(p0.ty), p0.iy - 2, H);
  let v1 = edge(lanczos3(p1.ty), p1.iy - 2, H);
  let v2 = edge(lanczos3(p2.ty), p2.iy - 2, H);
  let v3 = edge(lanczos3(p3.ty), p3.iy - 2, H);
  let v4 = edge(lanczos3(p4.ty), p4.iy - 2, H);
  let v5 = edge(lanczos3(p5.ty), p5.iy - 2, H);
  let v6 = edge(lanczos3(p6.ty), p6.iy - 2, H);
  let v7 = edge(lanczos3(p7.ty), p7.iy - 2, H);
  let u0_0 = vec4f(v0.lo.x, v1.lo.x, v2.lo.x, v3.lo.x);
  let u0_1 = vec4f(v4.lo.x, v5.lo.x, v6.lo.x, v7.lo.x);
  let u1_0 = vec4f(v0.lo.y, v1.lo.y, v2.lo.y, v3.lo.y);
  let u1_1 = vec4f(v4.lo.y, v5.lo.y, v6.lo.y, v7.lo.y);
  let u2_0 = vec4f(v0.lo.z, v1.lo.z, v2.lo.z, v3.lo.z);
  let u2_1 = vec4f(v4.lo.z, v5.lo.z, v6.lo.z, v7.lo.z);
  let u3_0 = vec4f(v0.hi.x, v1.hi.x, v2.hi.x, v3.hi.x);
  let u3_1 = vec4f(v4.hi.x, v5.hi.x, v6.hi.x, v7.hi.x);
  let u4_0 = vec4f(v0.hi.y, v1.hi.y, v2.hi.y, v3.hi.y);
  let u4_1 = vec4f(v4.hi.y, v5.hi.y, v6.hi.y, v7.hi.y);
  let u5_0 = vec4f(v0.hi.z, v1.hi.z, v2.hi.z, v3.hi.z);
  let u5_1 = vec4f(v4.hi.z, v5.hi.z, v6.hi.z, v7.hi.z);
  let zero = vec4f(0.0);
  let c0 = e0 - 2;
  let ca = vec4u(clamp(vec4i(c0, c0 + 1, c0 + 2, c0 + 3), vec4i(0), vec4i(W - 1)));
  let cb = vec4u(clamp(vec4i(c0 + 4, c0 + 5, c0 + 6, c0 + 7), vec4i(0), vec4i(W - 1)));
  let cc = vec4u(clamp(vec4i(c0 + 8, c0 + 9, c0 + 10, c0 + 11), vec4i(0), vec4i(W - 1)));
  let cd = vec2u(clamp(vec2i(c0 + 12, c0 + 13), vec2i(0), vec2i(W - 1)));
  let band0 = i32(params.src_y0);
  let last = max(i32(params.src_rows) - 1, 0);
  let stride = params.src_width;
  let r0 = iy0 - 2 - band0;
  let rows_a = vec4u(clamp(vec4i(r0, r0 + 1, r0 + 2, r0 + 3), vec4i(0), vec4i(last))) * stride;
  let rows_b = vec3u(clamp(vec3i(r0 + 4, r0 + 5, r0 + 6), vec3i(0), vec3i(last))) * stride;
  let q0 = row8(rows_a.x, ca, cb, cc, cd, w0, w1, w2, w3, w4, w5, w6, w7, dx0, dx1);
  let q1 = row8(rows_a.y, ca, cb, cc, cd, w0, w1, w2, w3, w4, w5, w6, w7, dx0, dx1);
  let q2 = row8(rows_a.z, ca, cb, cc, cd, w0, w1, w2, w3, w4, w5, w6, w7, dx0, dx1);
  let q3 = row8(rows_a.w, ca, cb, cc, cd, w0, w1, w2, w3, w4, w5, w6, w7, dx0, dx1);
  let q4 = row8(rows_b.x, ca, cb, cc, cd, w0, w1, w2, w3, w4, w5, w6, w7, dx0, dx1);
  let q5 = row8(rows_b.y, ca, cb, cc, cd, w0, w1, w2, w3, w4, w5, w6, w7, dx0, dx1);
  let q6 = row8(rows_b.z, ca, cb, cc, cd, w0, w1, w2, w3, w4, w5, w6, w7, dx0, dx1);
  let y0w0 = select(u0_0, zero, dy0);
  let y1w0 = select(u1_0, u0_0, dy0);
  let y2w0 = select(u2_0, u1_0, dy0);
  let y3w0 = select(u3_0, u2_0, dy0);
  let y4w0 = select(u4_0, u3_0, dy0);
  let y5w0 = select(u5_0, u4_0, dy0);
  let y6w0 = select(zero, u5_0, dy0);
  let y0w1 = select(u0_1, zero, dy1);
  let y1w1 = select(u1_1, u0_1, dy1);
  let y2w1 = select(u2_1, u1_1, dy1);
  let y3w1 = select(u3_1, u2_1, dy1);
  let y4w1 = select(u4_1, u3_1, dy1);
  let y5w1 = select(u5_1, u4_1, dy1);
  let y6w1 = select(zero, u5_1, dy1);
  let acc0 = y0w0 * q0.s0 + y1w0 * q1.s0 + y2w0 * q2.s0 + y3w0 * q3.s0 + y4w0 * q4.s0 + y5w0 * q5.s0 + y6w0 * q6.s0;
  let miss0 = y0w0 * q0.m0 + y1w0 * q1.m0 + y2w0 * q2.m0 + y3w0 * q3.m0 + y4w0 * q4.m0 + y5w0 * q5.m0 + y6w0 * q6.m0;
  let lo0 = select(min(q2.lo0, q3.lo0), min(q3.lo0, q4.lo0), dy0);
  let hi0 = select(max(q2.hi0, q3.hi0), max(q3.hi0, q4.hi0), dy0);
  let acc1 = y0w1 * q0.s1 + y1w1 * q1.s1 + y2w1 * q2.s1 + y3w1 * q3.s1 + y4w1 * q4.s1 + y5w1 * q5.s1 + y6w1 * q6.s1;
  let miss1 = y0w1 * q0.m1 + y1w1 * q1.m1 + y2w1 * q2.m1 + y3w1 * q3.m1 + y4w1 * q4.m1 + y5w1 * q5.m1 + y6w1 * q6.m1;
  let lo1 = select(min(q2.lo1, q3.lo1), min(q3.lo1, q4.lo1), dy1);
  let hi1 = select(max(q2.hi1, q3.hi1), max(q3.hi1, q4.hi1), dy1);
  let out_row = (y - params.y0) * params.width;
  let in0 = vec4<bool>(p0.inside, p1.inside, p2.inside, p3.inside) & vec4<bool>(fits);
  let res0 = vec4f(resolve(acc0.x, miss0.x, lo0.x, hi0.x), resolve(acc0.y, miss0.y, lo0.y, hi0.y), resolve(acc0.z, miss0.z, lo0.z, hi0.z), resolve(acc0.w, miss0.w, lo0.w, hi0.w));
  let out0 = select(vec4f(nan()), res0, in0);
  let sp = ln_span(min(xs0.x, xs1.w), y);
  if (xs0.x < params.width) {
    put_span(out_row + xs0.x, xs0.x, sp, out0.x);
  }
  if (xs0.y < params.width) {
    put_span(out_row + xs0.y, xs0.y, sp, out0.y);
  }
  if (xs0.z < params.width) {
    put_span(out_row + xs0.z, xs0.z, sp, out0.z);
  }
  if (xs0.w < params.width) {
    put_span(out_row + xs0.w, xs0.w, sp, out0.w);
  }
  let in1 = vec4<bool>(p4.inside, p5.inside, p6.inside, p7.inside) & vec4<bool>(fits);
  let res1 = vec4f(resolve(acc1.x, miss1.x, lo1.x, hi1.x), resolve(acc1.y, miss1.y, lo1.y, hi1.y), resolve(acc1.z, miss1.z, lo1.z, hi1.z), resolve(acc1.w, miss1.w, lo1.w, hi1.w));
  let out1 = select(vec4f(nan()), res1, in1);
  if (xs1.x < params.width) {
    put_span(out_row + xs1.x, xs1.x, sp, out1.x);
  }
  if (xs1.y < params.width) {
    put_span(out_row + xs1.y, xs1.y, sp, out1.y);
  }
  if (xs1.z < params.width) {
    put_span(out_row + xs1.z, xs1.z, sp, out1.z);
  }
  if (xs1.w < params.width) {
    put_span(out_row + xs1.w, xs1.w, sp, out1.w);
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.y;
  if (row >= params.rows) {
    return;
  }
  let y = params.y0 + row;
  if (GROUP == 8u) {
    let xb = gid.x * 8u;
    if (xb < params.width) {
      group8(xb, y);
    }
  } else if (GROUP == 4u) {
    let xb = gid.x * 4u;
    if (xb < params.width) {
      group4(xb, y);
    }
  } else {
    let x = gid.x;
    if (x < params.width) {
      put(row * params.width + x, x, y, single(x, y));
    }
  }
}
