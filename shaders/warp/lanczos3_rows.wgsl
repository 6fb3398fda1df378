// warp/lanczos3_rows: first (row) pass of the separable Lanczos-3 warp for near-identity affine
// transforms: resamples source rows along x at the output's columns into an intermediate band;
// the second pass (lanczos3_cols.wgsl) resamples its columns along y. Contract and TypeScript
// reference: src/cpu/warp.ts (warpLanczos3Separable); wrapper and validity rule:
// src/gpu/kernels/warp.ts (separableValid).
// Geometry: intermediate pixel (x, r) holds source row v = block_base(x & ~7) + r sampled at
// u = x + e00·x + e01·(v + 8) + e02 (fixed point, as lanczos3.wgsl's positions), the point of row
// v that output column x maps to (u = sx where sy = v). Fractions within 2^-20 snap.
// Bindings: 0 uniform Params (shared with lanczos3_cols.wgsl); 1 read-only array<f32> source band
//           (src_rows full-width rows from src_y0); 2 read_write array<f32> intermediate sums,
//           3 read_write array<u32> intermediate aux words (both irows × width, row-major).
// Output per intermediate pixel: the sum Σ w·v over the finite taps, and an aux word: when no
//           tap was dropped, the bits of the finite nearest pair's minimum (columns floor(u),
//           floor(u) + 1; BIG when both are non-finite); else a quiet NaN whose payload is the
//           dropped weight Σ w over the non-finite taps (encode()), and no minimum (the column
//           pass then derings against the other nearest row only). Two planes of one word each,
//           not a vec4: on llvmpipe every lane's load and store is a scalar step per component,
//           so the intermediate's width is most of the two passes' cost. Taps beyond the image's
//           columns weigh 0 (renormalised) and read the clamped edge; rows outside the image
//           hold (0, BIG) (weight 0 in the column pass); rows inside the image but outside the
//           band read the clamped band row (the column pass uses none with a non-zero weight).
// Workgroup: WG x 1 x 1; grid x = ⌈width / (8·WG)⌉, y = irows. Each invocation does 8 adjacent
//            columns of one row from a shared 14-column window (needs 7·|e00| < 1; the wrapper
//            checks). Precision: positions exact fixed point; weights and sums in f32.
// Shared with the other pass (fixed point, Params at @binding(0), tap weights, block base):
//!include warp/lanczos3_separable_common.wgsl

@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> inter: array<f32>;
@group(0) @binding(3) var<storage, read_write> aux: array<u32>;

override WG: u32 = 64;

fn is_finite4(v: vec4f) -> vec4<bool> {
  return (bitcast<vec4u>(v) & vec4u(0x7f800000u)) != vec4u(0x7f800000u);
}

struct Row8 {
  s0: vec4f, s1: vec4f,
  m0: vec4f, m1: vec4f,
  lo0: vec4f, lo1: vec4f,
}

// lanczos3.wgsl's row8: the 8 pixels' finite sums, dropped weights and nearest-pair minima.
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
  let lo0 = select(min(vec4f(la.z, la.w, lb.x, lb.y), vec4f(la.w, lb.x, lb.y, lb.z)), min(vec4f(la.w, lb.x, lb.y, lb.z), vec4f(lb.x, lb.y, lb.z, lb.w)), dx0);
  let lo1 = select(min(vec4f(lb.z, lb.w, lc.x, lc.y), vec4f(lb.w, lc.x, lc.y, lc.z)), min(vec4f(lb.w, lc.x, lc.y, lc.z), vec4f(lc.x, lc.y, lc.z, lc.w)), dx1);
  return Row8(s0, s1, m0, m1, lo0, lo1);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let r = gid.y;
  let xb = gid.x * 8u;
  if (r >= params.irows || xb >= params.width) {
    return;
  }
  let v = block_base(xb) + i32(r);
  let W = i32(params.src_width);
  let o = r * params.width + xb;
  let n = params.width - xb;
  // Displacement of column xb on row v; each next column adds e00 exactly.
  let step = fix(params.e00);
  let d0 = fix_add(fix_mul(step, xb), fix_add(fix_mul(fix(params.e01), u32(max(v + 8, 0))), fix(params.e02)));
  let d1 = fix_add(d0, step);
  let d2 = fix_add(d1, step);
  let d3 = fix_add(d2, step);
  let d4 = fix_add(d3, step);
  let d5 = fix_add(d4, step);
  let d6 = fix_add(d5, step);
  let d7 = fix_add(d6, step);
  let s0 = split_snap(d0);
  let s1 = split_snap(d1);
  let s2 = split_snap(d2);
  let s3 = split_snap(d3);
  let s4 = split_snap(d4);
  let s5 = split_snap(d5);
  let s6 = split_snap(d6);
  let s7 = split_snap(d7);
  // Window origin: the lowest footprint start; footprints start 0 or 1 column after it.
  let e_0 = vec4i(s0.x, s1.x, s2.x, s3.x) + vec4i(i32(xb));
  let e_1 = vec4i(s4.x, s5.x, s6.x, s7.x) + vec4i(i32(xb));
  let em = min(e_0, e_1);
  let e0 = min(min(em.x, em.y), min(em.z, em.w));
  let dxo0 = e_0 - vec4i(e0);
  let dxo1 = e_1 - vec4i(e0);
  let fits = all(dxo0 <= vec4i(1)) && all(dxo1 <= vec4i(1));
  let dx0 = dxo0 == vec4i(1);
  let dx1 = dxo1 == vec4i(1);
  // Footprint of column xb + k starts at ix − 2 = e0 + k + shift − 2.
  let ix_0 = e_0 + vec4i(0, 1, 2, 3);
  let ix_1 = e_1 + vec4i(4, 5, 6, 7);
  let w0 = place(edge(lanczos3(f32(s0.y) * T_UNIT), ix_0.x - 2, W), dx0.x);
  let w1 = place(edge(lanczos3(f32(s1.y) * T_UNIT), ix_0.y - 2, W), dx0.y);
  let w2 = place(edge(lanczos3(f32(s2.y) * T_UNIT), ix_0.z - 2, W), dx0.z);
  let w3 = place(edge(lanczos3(f32(s3.y) * T_UNIT), ix_0.w - 2, W), dx0.w);
  let w4 = place(edge(lanczos3(f32(s4.y) * T_UNIT), ix_1.x - 2, W), dx1.x);
  let w5 = place(edge(lanczos3(f32(s5.y) * T_UNIT), ix_1.y - 2, W), dx1.y);
  let w6 = place(edge(lanczos3(f32(s6.y) * T_UNIT), ix_1.z - 2, W), dx1.z);
  let w7 = place(edge(lanczos3(f32(s7.y) * T_UNIT), ix_1.w - 2, W), dx1.w);
  let c0 = e0 - 2;
  let ca = vec4u(clamp(vec4i(c0, c0 + 1, c0 + 2, c0 + 3), vec4i(0), vec4i(W - 1)));
  let cb = vec4u(clamp(vec4i(c0 + 4, c0 + 5, c0 + 6, c0 + 7), vec4i(0), vec4i(W - 1)));
  let cc = vec4u(clamp(vec4i(c0 + 8, c0 + 9, c0 + 10, c0 + 11), vec4i(0), vec4i(W - 1)));
  let cd = vec2u(clamp(vec2i(c0 + 12, c0 + 13), vec2i(0), vec2i(W - 1)));
  let rb = u32(clamp(v - i32(params.src_y0), 0, max(i32(params.src_rows) - 1, 0))) * params.src_width;
  let q = row8(rb, ca, cb, cc, cd, w0, w1, w2, w3, w4, w5, w6, w7, dx0, dx1);
  // A window that does not fit (a transform the wrapper should have refused) yields NaN.
  // A row outside the image (read clamped): the column pass gives it weight 0, so it only has
  // to be finite and stay out of the nearest-pair minima. (A select, not an early return:
  // llvmpipe runs both sides of a branch under a lane mask.)
  let outside = vec4<bool>(v < 0 || v >= i32(params.src_height));
  let acc0 = select(select(vec4f(nan()), q.s0, vec4<bool>(fits)), vec4f(0.0), outside);
  let acc1 = select(select(vec4f(nan()), q.s1, vec4<bool>(fits)), vec4f(0.0), outside);
  let aux0 = select(encode(q.m0, q.lo0), vec4u(bitcast<u32>(BIG)), outside);
  let aux1 = select(encode(q.m1, q.lo1), vec4u(bitcast<u32>(BIG)), outside);
  inter[o] = acc0.x;
  aux[o] = aux0.x;
  if (n > 1u) { inter[o + 1u] = acc0.y; aux[o + 1u] = aux0.y; }
  if (n > 2u) { inter[o + 2u] = acc0.z; aux[o + 2u] = aux0.z; }
  if (n > 3u) { inter[o + 3u] = acc0.w; aux[o + 3u] = aux0.w; }
  if (n > 4u) { inter[o + 4u] = acc1.x; aux[o + 4u] = aux1.x; }
  if (n > 5u) { inter[o + 5u] = acc1.y; aux[o + 5u] = aux1.y; }
  if (n > 6u) { inter[o + 6u] = acc1.z; aux[o + 6u] = aux1.z; }
  if (n > 7u) { inter[o + 7u] = acc1.w; aux[o + 7u] = aux1.w; }
}

// The aux word: the nearest-pair minimum's bits when no tap was dropped, else a quiet NaN whose
// payload holds the dropped weight (bit 21 sign, bits 0..20 magnitude in units of 2^-20; the
// minimum is then not kept: see the head comment).
fn encode(m: vec4f, lo: vec4f) -> vec4u {
  let mag = vec4u(round(min(abs(m), vec4f(1.99)) * 1048576.0));
  let word = vec4u(0x7fc00000u) | select(vec4u(0u), vec4u(0x200000u), m < vec4f(0.0)) | mag;
  return select(word, bitcast<vec4u>(lo), m == vec4f(0.0));
}
