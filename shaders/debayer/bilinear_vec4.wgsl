// debayer/bilinear_vec4: debayer/bilinear.wgsl for widths that are a multiple of 4, reading and
// writing whole vec4f (4 adjacent pixels of a row). Same contract as src/cpu/debayer.ts: sites
// keep their own colour as measured; a missing colour is the mean of the 2 or 4 nearest
// same-colour neighbours; image borders reflect without repeating the edge (-1 -> 1,
// W -> W-2; a 1-row image has no vertical neighbours); non-finite neighbours are skipped.
// Bindings: 0 uniform Params; 1 read-only array<vec4f> mosaic rows read_y0 .. read_y0+read_rows-1
//           (full width, one halo row each side of the owned rows where the image has them);
//           2, 3, 4 read_write array<vec4f> R, G, B planes (rows x width each).
// Workgroup: WG x 1 x 1; one invocation per block of 4 columns (x0 = 4 * gid.x) by 2 rows (a
//            red row oy and the blue row below it; oy = cell_y0 + 2 * gid.y). It loads 3 vec4
//            per row of the 4-row window (12 loads for 8 pixels) and stores 6 vec4. On llvmpipe
//            storage access is per SIMD lane, so this cut the kernel's CPU time by ~30% against
//            the scalar 2x2-cell kernel. Grid: x = ceil(width / 4 / WG), y = block rows.
// Precision: f32 sums of 2 or 4 values divided by the count of finite ones (the reference sums
//            in f64 and rounds once; results agree to a few f32 ulps of the neighbours).
// No-data: non-finite (NaN, ±Inf) neighbours are left out of a mean; a mean with no finite
//          neighbour is NaN. A NaN site value stays NaN in its own plane.

struct Params {
  width: u32,     // full-image width, a multiple of 4
  height: u32,    // full-image height (bottom reflection)
  y0: u32,        // first owned row, full-image index
  rows: u32,      // owned rows
  read_y0: u32,   // full-image row of mosaic's first row
  read_rows: u32, // rows held in mosaic
  rx: u32,        // column parity of red sites
  cell_y0: i32,   // full-image row of the first block's red row (at or above y0)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> mosaic: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> out_r: array<vec4f>;
@group(0) @binding(3) var<storage, read_write> out_g: array<vec4f>;
@group(0) @binding(4) var<storage, read_write> out_b: array<vec4f>;

override WG: u32 = 64;

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

// Start (in vec4s) of a reflected full-image row inside mosaic, or -1 when the row does not
// exist (1-row image). Rows outside the band are clamped into it: only rows that are not
// stored can need them.
fn row_base(y: i32) -> i32 {
  let h = i32(params.height);
  let r = select(select(y, 2 * h - 2 - y, y >= h), -y, y < 0);
  if (r < 0 || r >= h) {
    return -1;
  }
  let local = clamp(r - i32(params.read_y0), 0, i32(params.read_rows) - 1);
  return local * i32(params.width / 4u);
}

// Columns x0-1 .. x0+4 of one row: l, then v (x0 .. x0+3), then r; reflected at the image's
// left and right edges, NaN when the row does not exist.
struct Win {
  l: f32,
  v: vec4f,
  r: f32,
}

fn win(base: i32, q: u32) -> Win {
  let last = params.width / 4u - 1u;
  let i = u32(max(base, 0)) + q;
  let mid = mosaic[i];
  // Loads stay in the row: the neighbour vec4 is read only when it exists (else reflect).
  let left = select(mosaic[i - select(1u, 0u, q == 0u)].w, mid.y, q == 0u);
  let right = select(mosaic[i + select(1u, 0u, q == last)].x, mid.z, q == last);
  let nan = bitcast<f32>(NAN_BITS);
  let ok = base >= 0;
  return Win(select(nan, left, ok), select(vec4f(nan), mid, ok), select(nan, right, ok));
}

// (value, 1) for a finite value, (0, 0) otherwise: summing these gives (sum, count).
// Bit test, because compilers may fold isnan-style comparisons away.
fn fin(v: f32) -> vec2f {
  return select(vec2f(0.0), vec2f(v, 1.0), (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u);
}

fn mean(s: vec2f) -> f32 {
  return select(bitcast<f32>(NAN_BITS), s.x / s.y, s.y > 0.0);
}

fn mean2(a: f32, b: f32) -> f32 {
  return mean(fin(a) + fin(b));
}

fn mean4(a: f32, b: f32, c: f32, d: f32) -> f32 {
  return mean(fin(a) + fin(b) + fin(c) + fin(d));
}

// One output row: P is the plane of the row's own chroma, Q the other chroma.
struct RowOut {
  p: vec4f,
  g: vec4f,
  q: vec4f,
}

// Chroma site: green from the 4 orthogonal, the other chroma from the 4 diagonal neighbours.
fn chroma_site(l: f32, c: f32, r: f32, ul: f32, u: f32, ur: f32, dl: f32, d: f32, dr: f32) -> vec3f {
  return vec3f(c, mean4(l, r, u, d), mean4(ul, ur, dl, dr));
}

// Green site: the row's chroma from left/right, the other chroma from up/down.
fn green_site(l: f32, c: f32, r: f32, u: f32, d: f32) -> vec3f {
  return vec3f(mean2(l, r), c, mean2(u, d));
}

// Row whose chroma sites are at x0 and x0+2 (lanes 0 and 2).
fn row_chroma_first(up: Win, cur: Win, dn: Win) -> RowOut {
  let a = chroma_site(cur.l, cur.v.x, cur.v.y, up.l, up.v.x, up.v.y, dn.l, dn.v.x, dn.v.y);
  let b = green_site(cur.v.x, cur.v.y, cur.v.z, up.v.y, dn.v.y);
  let c = chroma_site(cur.v.y, cur.v.z, cur.v.w, up.v.y, up.v.z, up.v.w, dn.v.y, dn.v.z, dn.v.w);
  let d = green_site(cur.v.z, cur.v.w, cur.r, up.v.w, dn.v.w);
  return RowOut(vec4f(a.x, b.x, c.x, d.x), vec4f(a.y, b.y, c.y, d.y), vec4f(a.z, b.z, c.z, d.z));
}

// Row whose chroma sites are at x0+1 and x0+3 (lanes 1 and 3).
fn row_green_first(up: Win, cur: Win, dn: Win) -> RowOut {
  let a = green_site(cur.l, cur.v.x, cur.v.y, up.v.x, dn.v.x);
  let b = chroma_site(cur.v.x, cur.v.y, cur.v.z, up.v.x, up.v.y, up.v.z, dn.v.x, dn.v.y, dn.v.z);
  let c = green_site(cur.v.y, cur.v.z, cur.v.w, up.v.z, dn.v.z);
  let d = chroma_site(cur.v.z, cur.v.w, cur.r, up.v.z, up.v.w, up.r, dn.v.z, dn.v.w, dn.r);
  return RowOut(vec4f(a.x, b.x, c.x, d.x), vec4f(a.y, b.y, c.y, d.y), vec4f(a.z, b.z, c.z, d.z));
}

fn row_out(up: Win, cur: Win, dn: Win, chroma_first: bool) -> RowOut {
  // Uniform branch: every invocation takes the same side.
  if (chroma_first) {
    return row_chroma_first(up, cur, dn);
  }
  return row_green_first(up, cur, dn);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let w4 = params.width / 4u;
  let q = gid.x;
  if (q >= w4) {
    return;
  }
  let oy = params.cell_y0 + 2 * i32(gid.y);
  let r0 = win(row_base(oy - 1), q);
  let r1 = win(row_base(oy), q);
  let r2 = win(row_base(oy + 1), q);
  let r3 = win(row_base(oy + 2), q);
  // Red row oy: red sites at parity rx (lane 0 when rx = 0); blue row oy+1: blue at 1 - rx.
  let yl = oy - i32(params.y0);
  if (yl >= 0 && yl < i32(params.rows)) {
    let red = row_out(r0, r1, r2, params.rx == 0u);
    let i = u32(yl) * w4 + q;
    out_r[i] = red.p;
    out_g[i] = red.g;
    out_b[i] = red.q;
  }
  if (yl + 1 >= 0 && yl + 1 < i32(params.rows)) {
    let blue = row_out(r1, r2, r3, params.rx == 1u);
    let i = u32(yl + 1) * w4 + q;
    out_r[i] = blue.q;
    out_g[i] = blue.g;
    out_b[i] = blue.p;
  }
}
