// warp/lanczos3_cols: second (column) pass of the separable Lanczos-3 warp: resamples the
// intermediate band of lanczos3_rows.wgsl along y into the output band. Contract and TypeScript
// reference: src/cpu/warp.ts (warpLanczos3Separable); wrapper: src/gpu/kernels/warp.ts.
// Geometry: output pixel (x, y) takes the 2-D kernel's exact source position (sx, sy)
// (fixed point, lanczos3.wgsl's disp_at); its six taps are the intermediate's column x at source
// rows floor(sy) − 2 … floor(sy) + 3, weighted by Lanczos-3 of sy's fraction (rows outside the
// image weigh 0, renormalised).
// Bindings: 0 uniform Params (lanczos3_rows.wgsl's); 1 read-only array<f32> intermediate sums;
//           2 read-only array<u32> intermediate aux words (lanczos3_rows.wgsl's encode());
//           3 read_write array<f32> output band (rows × width); 4 read-only array<vec4f> local-
//           normalization column table (LN = 1: src/cpu/ln-apply.ts lnColumnTable, per linear
//           piece p of the grid's y axis and column, (a, b) at u = p and per unit of u; each value
//           stored as a·v + b, ln_apply.wgsl's bilinear (a, b) to f32 rounding; the wrapper
//           takes this path only where node rows are >= 8 px apart, so a group of 8 rows meets at
//           most two pieces; LN = 0: any buffer, unread).
// No-data (lanczos3.wgsl's rule): NaN where the nearest pixel of (sx, sy) is outside the source;
//          the finite sums and dropped weights of the row pass combine to Σ w·v over the finite
//          2-D taps and the weight of the dropped ones, so the result is renormalised over the
//          rest if their weight sum >= min_weight, else NaN (the dropped weight carried in 2^-20
//          steps). Deringing: clamp_mode 1 = not below the minimum of the finite nearest pairs of
//          the two nearest rows (each row's pair at its own u; a row with a dropped tap
//          contributes none), 0 = off; 'range' (2) takes the 2-D kernel (the wrapper's rule).
// Workgroup: WG x 1 x 1; grid x = ⌈width / WG⌉, y = ⌈(y0 mod 8 + rows) / 8⌉: each invocation does 8 output
//            rows of one column from a shared 14-row window of the intermediate (needs
//            7·|d11| < 1; the wrapper checks).
// Shared with the other pass (fixed point, Params at @binding(0), tap weights, block base):
//!include warp/lanczos3_separable_common.wgsl

@group(0) @binding(1) var<storage, read> inter: array<f32>;
@group(0) @binding(2) var<storage, read> aux: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;
@group(0) @binding(4) var<storage, read> ln_col: array<vec4<f32>>;

override WG: u32 = 64;
override LN: u32 = 0;

// Final value from the sum over finite taps and the weight of the dropped ones, deringed
// (clamp_mode 1) against lo (BIG: no finite nearest pixel, left alone).
fn resolve(acc: f32, miss: f32, lo: f32) -> f32 {
  let wsum = 1.0 - miss;
  if (miss != 0.0 && !(wsum >= params.min_weight)) {
    return nan();
  }
  let v = select(acc / wsum, acc, miss == 0.0);
  return select(v, max(v, lo), params.clamp_mode == 1u && lo < BIG);
}

fn is_boxed(w: vec4u) -> vec4<bool> {
  return (w & vec4u(0x7fc00000u)) == vec4u(0x7fc00000u);
}

// The dropped weight of an aux word (lanczos3_rows.wgsl's encode): 0 unless a NaN box.
fn miss_of(w: vec4u) -> vec4f {
  let mag = vec4f(w & vec4u(0x1fffffu)) * 9.5367431640625e-7;
  return select(vec4f(0.0), select(mag, -mag, (w & vec4u(0x200000u)) != vec4u(0u)), is_boxed(w));
}

// The nearest-pair minimum of an aux word: BIG (none kept) for a NaN box.
fn lo_of(w: vec4u) -> vec4f {
  return select(bitcast<vec4f>(w), vec4f(BIG), is_boxed(w));
}

struct Pix {
  iy: i32,      // snapped floor(sy)
  ty: f32,      // fraction
  inside: bool, // nearest pixel of (sx, sy) inside the source
}

fn pix(dx: Fix, dy: Fix, x: u32, y: u32) -> Pix {
  let sx = split_snap(dx);
  let sy = split_snap(dy);
  let ix = i32(x) + sx.x;
  let iy = i32(y) + sy.x;
  let nx = ix + select(0, 1, sx.y >= (1 << 23u));
  let ny = iy + select(0, 1, sy.y >= (1 << 23u));
  let inside = nx >= 0 && nx < i32(params.src_width) && ny >= 0 && ny < i32(params.src_height);
  return Pix(iy, f32(sy.y) * T_UNIT, inside);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  // Groups of 8 rows are aligned to image rows (multiples of 8), not to the band: a pixel's group,
  // window placement and so its f32 rounding are the same whatever band it falls in, so a stack
  // in several bands equals the one-band stack exactly.
  let x = gid.x;
  let y = (params.y0 & ~7u) + gid.y * 8u;
  let end = params.y0 + params.rows;
  if (x >= params.width || y >= end) {
    return;
  }
  let H = i32(params.src_height);
  let base = block_base(x & ~7u);
  // Displacements of (x, y .. y + 7): each next row adds (d01, d11) exactly.
  let sx = fix(params.d01);
  let sy = fix(params.d11);
  let dx0 = fix_add(fix_mul(fix(params.d00), x), fix_add(fix_mul(sx, y), fix(params.d02)));
  let dy0 = fix_add(fix_mul(fix(params.d10), x), fix_add(fix_mul(sy, y), fix(params.d12)));
  let dx1 = fix_add(dx0, sx);
  let dy1 = fix_add(dy0, sy);
  let dx2 = fix_add(dx1, sx);
  let dy2 = fix_add(dy1, sy);
  let dx3 = fix_add(dx2, sx);
  let dy3 = fix_add(dy2, sy);
  let dx4 = fix_add(dx3, sx);
  let dy4 = fix_add(dy3, sy);
  let dx5 = fix_add(dx4, sx);
  let dy5 = fix_add(dy4, sy);
  let dx6 = fix_add(dx5, sx);
  let dy6 = fix_add(dy5, sy);
  let dx7 = fix_add(dx6, sx);
  let dy7 = fix_add(dy6, sy);
  let p0 = pix(dx0, dy0, x, y);
  let p1 = pix(dx1, dy1, x, y + 1u);
  let p2 = pix(dx2, dy2, x, y + 2u);
  let p3 = pix(dx3, dy3, x, y + 3u);
  let p4 = pix(dx4, dy4, x, y + 4u);
  let p5 = pix(dx5, dy5, x, y + 5u);
  let p6 = pix(dx6, dy6, x, y + 6u);
  let p7 = pix(dx7, dy7, x, y + 7u);
  // Intermediate row of pixel k's first tap, less k: the window starts at the lowest.
  let e_0 = vec4i(p0.iy, p1.iy - 1, p2.iy - 2, p3.iy - 3) - vec4i(base + 2);
  let e_1 = vec4i(p4.iy - 4, p5.iy - 5, p6.iy - 6, p7.iy - 7) - vec4i(base + 2);
  let em = min(e_0, e_1);
  let e0 = min(min(em.x, em.y), min(em.z, em.w));
  let dyo0 = e_0 - vec4i(e0);
  let dyo1 = e_1 - vec4i(e0);
  let fits = all(dyo0 <= vec4i(1)) && all(dyo1 <= vec4i(1));
  let sh0 = dyo0 == vec4i(1);
  let sh1 = dyo1 == vec4i(1);
  let w0 = place(edge(lanczos3(p0.ty), p0.iy - 2, H), sh0.x);
  let w1 = place(edge(lanczos3(p1.ty), p1.iy - 2, H), sh0.y);
  let w2 = place(edge(lanczos3(p2.ty), p2.iy - 2, H), sh0.z);
  let w3 = place(edge(lanczos3(p3.ty), p3.iy - 2, H), sh0.w);
  let w4 = place(edge(lanczos3(p4.ty), p4.iy - 2, H), sh1.x);
  let w5 = place(edge(lanczos3(p5.ty), p5.iy - 2, H), sh1.y);
  let w6 = place(edge(lanczos3(p6.ty), p6.iy - 2, H), sh1.z);
  let w7 = place(edge(lanczos3(p7.ty), p7.iy - 2, H), sh1.w);
  // Window rows e0 .. e0 + 13 of column x (clamped; rows past the intermediate weigh 0).
  let last = i32(params.irows) - 1;
  let W = params.width;
  let ra = vec4u(clamp(vec4i(e0, e0 + 1, e0 + 2, e0 + 3), vec4i(0), vec4i(last))) * W + vec4u(x);
  let rbb = vec4u(clamp(vec4i(e0 + 4, e0 + 5, e0 + 6, e0 + 7), vec4i(0), vec4i(last))) * W + vec4u(x);
  let rc = vec4u(clamp(vec4i(e0 + 8, e0 + 9, e0 + 10, e0 + 11), vec4i(0), vec4i(last))) * W + vec4u(x);
  let rd = vec2u(clamp(vec2i(e0 + 12, e0 + 13), vec2i(0), vec2i(last))) * W + vec2u(x);
  let sa = vec4f(inter[ra.x], inter[ra.y], inter[ra.z], inter[ra.w]);
  let sb = vec4f(inter[rbb.x], inter[rbb.y], inter[rbb.z], inter[rbb.w]);
  let sc = vec4f(inter[rc.x], inter[rc.y], inter[rc.z], inter[rc.w]);
  let sd = vec2f(inter[rd.x], inter[rd.y]);
  let xa = vec4u(aux[ra.x], aux[ra.y], aux[ra.z], aux[ra.w]);
  let xb = vec4u(aux[rbb.x], aux[rbb.y], aux[rbb.z], aux[rbb.w]);
  let xc = vec4u(aux[rc.x], aux[rc.y], aux[rc.z], aux[rc.w]);
  let xd = vec2u(aux[rd.x], aux[rd.y]);
  // Dropped weights (ma..md) and nearest-pair minima (la..lc) by row, from the aux words.
  let ma = miss_of(xa);
  let mb = miss_of(xb);
  let mc = miss_of(xc);
  let md = miss_of(vec4u(xd, 0u, 0u)).xy;
  let la = lo_of(xa);
  let lb = lo_of(xb);
  let lc = lo_of(xc);
  // Rows 0..13 = a.xyzw b.xyzw c.xyzw d.xy; pixel k covers rows k .. k+6.
  let acc0 = vec4f(
    dot7(w0, vec4f(sa.x, sa.y, sa.z, sa.w), vec3f(sb.x, sb.y, sb.z)),
    dot7(w1, vec4f(sa.y, sa.z, sa.w, sb.x), vec3f(sb.y, sb.z, sb.w)),
    dot7(w2, vec4f(sa.z, sa.w, sb.x, sb.y), vec3f(sb.z, sb.w, sc.x)),
    dot7(w3, vec4f(sa.w, sb.x, sb.y, sb.z), vec3f(sb.w, sc.x, sc.y)));
  let acc1 = vec4f(
    dot7(w4, vec4f(sb.x, sb.y, sb.z, sb.w), vec3f(sc.x, sc.y, sc.z)),
    dot7(w5, vec4f(sb.y, sb.z, sb.w, sc.x), vec3f(sc.y, sc.z, sc.w)),
    dot7(w6, vec4f(sb.z, sb.w, sc.x, sc.y), vec3f(sc.z, sc.w, sd.x)),
    dot7(w7, vec4f(sb.w, sc.x, sc.y, sc.z), vec3f(sc.w, sd.x, sd.y)));
  let miss0 = vec4f(
    dot7(w0, vec4f(ma.x, ma.y, ma.z, ma.w), vec3f(mb.x, mb.y, mb.z)),
    dot7(w1, vec4f(ma.y, ma.z, ma.w, mb.x), vec3f(mb.y, mb.z, mb.w)),
    dot7(w2, vec4f(ma.z, ma.w, mb.x, mb.y), vec3f(mb.z, mb.w, mc.x)),
    dot7(w3, vec4f(ma.w, mb.x, mb.y, mb.z), vec3f(mb.w, mc.x, mc.y)));
  let miss1 = vec4f(
    dot7(w4, vec4f(mb.x, mb.y, mb.z, mb.w), vec3f(mc.x, mc.y, mc.z)),
    dot7(w5, vec4f(mb.y, mb.z, mb.w, mc.x), vec3f(mc.y, mc.z, mc.w)),
    dot7(w6, vec4f(mb.z, mb.w, mc.x, mc.y), vec3f(mc.z, mc.w, md.x)),
    dot7(w7, vec4f(mb.w, mc.x, mc.y, mc.z), vec3f(mc.w, md.x, md.y)));
  // Nearest rows of pixel k: k+2, k+3 (k+3, k+4 when shifted).
  let lo0 = select(min(vec4f(la.z, la.w, lb.x, lb.y), vec4f(la.w, lb.x, lb.y, lb.z)), min(vec4f(la.w, lb.x, lb.y, lb.z), vec4f(lb.x, lb.y, lb.z, lb.w)), sh0);
  let lo1 = select(min(vec4f(lb.z, lb.w, lc.x, lc.y), vec4f(lb.w, lc.x, lc.y, lc.z)), min(vec4f(lb.w, lc.x, lc.y, lc.z), vec4f(lc.x, lc.y, lc.z, lc.w)), sh1);
  let r0 = vec4f(resolve(acc0.x, miss0.x, lo0.x), resolve(acc0.y, miss0.y, lo0.y), resolve(acc0.z, miss0.z, lo0.z), resolve(acc0.w, miss0.w, lo0.w));
  let r1 = vec4f(resolve(acc1.x, miss1.x, lo1.x), resolve(acc1.y, miss1.y, lo1.y), resolve(acc1.z, miss1.z, lo1.z), resolve(acc1.w, miss1.w, lo1.w));
  let out0 = select(vec4f(nan()), r0, vec4<bool>(p0.inside, p1.inside, p2.inside, p3.inside) & vec4<bool>(fits));
  let out1 = select(vec4f(nan()), r1, vec4<bool>(p4.inside, p5.inside, p6.inside, p7.inside) & vec4<bool>(fits));
  if (LN == 0u) {
    store(x, y, 0u, out0.x);
    store(x, y, 1u, out0.y);
    store(x, y, 2u, out0.z);
    store(x, y, 3u, out0.w);
    store(x, y, 4u, out1.x);
    store(x, y, 5u, out1.y);
    store(x, y, 6u, out1.z);
    store(x, y, 7u, out1.w);
    return;
  }
  // Local normalization: (a, b) is a straight line along the column inside each linear piece of
  // the grid's y axis, and the group's rows meet at most two (node rows are >= 8 px apart): two
  // table loads give the 8 pixels' (a, b), whichever piece each row is in (no branch: llvmpipe
  // runs both sides of an `if`, and each indexed load is a loop over the lanes).
  let piece_a = ln_piece(max(y, params.y0));
  let piece_b = ln_piece(min(y + 7u, end - 1u));
  let a = Line(ln_col[ln_index(piece_a) * params.width + x], ln_listed(piece_a));
  let b = Line(ln_col[ln_index(piece_b) * params.width + x], ln_listed(piece_b));
  put(x, y, 0u, piece_a, a, b, out0.x);
  put(x, y, 1u, piece_a, a, b, out0.y);
  put(x, y, 2u, piece_a, a, b, out0.z);
  put(x, y, 3u, piece_a, a, b, out0.w);
  put(x, y, 4u, piece_a, a, b, out1.x);
  put(x, y, 5u, piece_a, a, b, out1.y);
  put(x, y, 6u, piece_a, a, b, out1.z);
  put(x, y, 7u, piece_a, a, b, out1.w);
}

// A column table entry and the piece it belongs to (its u origin).
struct Line {
  e: vec4<f32>,
  p: f32,
}

fn in_band(row: u32) -> bool {
  return row >= params.y0 && row < params.y0 + params.rows;
}

// Stores v of pixel (x, y + k) when that row is in the band (LN = 0).
fn store(x: u32, y: u32, k: u32, v: f32) {
  let row = y + k;
  if (in_band(row)) {
    dst[(row - params.y0) * params.width + x] = v;
  }
}

// The linear piece of the grid's y axis image row `row` falls in (src/cpu/ln-apply.ts lnPiece, in
// f32): −1 below the low clamp and for one node row, ln_ny − 1 above the high clamp, else the cell.
// A row on a boundary may fall either way: the lines meet there.
fn ln_piece(row: u32) -> i32 {
  let n = f32(params.ln_ny);
  let u = (f32(row) - params.ln_y0) / params.ln_dy;
  let cell = i32(clamp(floor(u), 0.0, max(n - 2.0, 0.0)));
  return select(select(cell, i32(params.ln_ny) - 1, u > n - 0.5), -1, u < -0.5 || params.ln_ny == 1u);
}

// A piece's entry in the column table, and the piece that entry is (the same unless the piece
// is not listed: the table holds one more piece each side of the band's, so only a rounding the
// other way at its edge could get there, and the neighbour's line meets it at that row).
fn ln_index(piece: i32) -> u32 {
  return u32(clamp(piece - params.ln_first_piece, 0, i32(params.ln_pieces) - 1));
}

fn ln_listed(piece: i32) -> f32 {
  return f32(params.ln_first_piece + i32(ln_index(piece)));
}

// Stores v of row y + k (in the band) as a·v + b, (a, b) on the line of its piece (a clamp's zw
// is 0, so its u origin does not matter; NaN stays NaN).
fn put(x: u32, y: u32, k: u32, piece_a: i32, a: Line, b: Line, v: f32) {
  let row = y + k;
  if (in_band(row)) {
    let on_a = ln_piece(row) == piece_a;
    let e = select(b.e, a.e, on_a);
    let u = (f32(row) - params.ln_y0) / params.ln_dy;
    let ab = e.xy + e.zw * (u - select(b.p, a.p, on_a));
    dst[(row - params.y0) * params.width + x] = ab.x * v + ab.y;
  }
}
