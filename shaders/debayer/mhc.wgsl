// debayer/mhc: Malvar-He-Cutler gradient-corrected bilinear debayering of one CFA mosaic band
// (f32) to three planar f32 planes R, G, B for the band's owned rows. Same contract as
// debayerMhc in src/cpu/debayer.ts: each missing colour is the bilinear estimate corrected by
// the Laplacian of the site's own colour (5x5 filters / 8, weights summing to 8); borders
// reflect without repeating the edge (-2 -> 2, W+1 -> W-3).
// Bindings: 0 uniform Params; 1 read-only array<f32> mosaic rows read_y0 .. read_y0+read_rows-1
//           (full width, with two halo rows each side of the owned rows where the image has
//           them); 2, 3, 4 read_write array<f32> R, G, B planes (rows x width each).
// Workgroup: WG x 1 x 1; one invocation per 2x2 cell whose top-left is a red site (cell origin
//            shifted by the red site's parity, as in bilinear.wgsl): 24 loads for 4 pixels.
//            Grid: x = ceil(cells_x / WG), y = cell rows.
// Precision: f32 weighted sums of 13 taps times 1/8 (the reference sums in f64 and rounds once).
// No-data: an output whose 13 taps are not all finite and present (images under 3 pixels in a
//          dimension) takes the bilinear value, which skips non-finite neighbours (NaN if none).
//          A NaN site value stays NaN in its own plane.

struct Params {
  width: u32,     // full-image width = row stride of mosaic and planes
  height: u32,    // full-image height (bottom reflection)
  y0: u32,        // first owned row, full-image index
  rows: u32,      // owned rows
  read_y0: u32,   // full-image row of mosaic's first row
  read_rows: u32, // rows held in mosaic
  rx: u32,        // column parity of red sites
  cell_y0: i32,   // full-image row of the first cell row: a red row at or above y0
  cells_x: u32,   // cells per row: ceil((width + rx) / 2)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> mosaic: array<f32>;
@group(0) @binding(2) var<storage, read_write> out_r: array<f32>;
@group(0) @binding(3) var<storage, read_write> out_g: array<f32>;
@group(0) @binding(4) var<storage, read_write> out_b: array<f32>;

override WG: u32 = 64;

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

// Reflection without edge repeat; may stay out of range for dimensions under 3 (then absent).
fn reflect(i: i32, n: i32) -> i32 {
  return select(select(i, 2 * n - 2 - i, i >= n), -i, i < 0);
}

// Start of a reflected full-image row inside mosaic, or -1 when the row does not exist.
// Rows outside the band are clamped into it: only pixels that are not written can need them.
fn row_base(y: i32) -> i32 {
  let r = reflect(y, i32(params.height));
  if (r < 0 || r >= i32(params.height)) {
    return -1;
  }
  let local = clamp(r - i32(params.read_y0), 0, i32(params.read_rows) - 1);
  return local * i32(params.width);
}

// Value at a row base and an already reflected column; NaN where either does not exist.
fn load(base: i32, c: i32) -> f32 {
  let w = i32(params.width);
  let ok = base >= 0 && c >= 0 && c < w;
  let v = mosaic[u32(max(base, 0) + clamp(c, 0, w - 1))];
  return select(bitcast<f32>(NAN_BITS), v, ok);
}

// Bit test, because compilers may fold isnan-style comparisons away.
fn finite(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// (value, 1) for a finite value, (0, 0) otherwise: summing these gives (sum, count).
fn fin(v: f32) -> vec2f {
  return select(vec2f(0.0), vec2f(v, 1.0), finite(v));
}

fn mean(s: vec2f) -> f32 {
  return select(bitcast<f32>(NAN_BITS), s.x / s.y, s.y > 0.0);
}

fn all_finite(c: f32, l: f32, r: f32, u: f32, d: f32, l2: f32, r2: f32, u2: f32, d2: f32, ul: f32, ur: f32, dl: f32, dr: f32) -> bool {
  return finite(c) & finite(l) & finite(r) & finite(u) & finite(d) & finite(l2) & finite(r2) & finite(u2) & finite(d2)
    & finite(ul) & finite(ur) & finite(dl) & finite(dr);
}

// Chroma (R or B) site: (own, G, other chroma).
fn mhc_chroma(c: f32, l: f32, r: f32, u: f32, d: f32, l2: f32, r2: f32, u2: f32, d2: f32, ul: f32, ur: f32, dl: f32, dr: f32) -> vec3f {
  let far = l2 + r2 + u2 + d2;
  let g = (4.0 * c + 2.0 * (l + r + u + d) - far) * 0.125;
  let q = (6.0 * c + 2.0 * (ul + ur + dl + dr) - 1.5 * far) * 0.125;
  let ok = all_finite(c, l, r, u, d, l2, r2, u2, d2, ul, ur, dl, dr);
  let g_lin = mean(fin(l) + fin(r) + fin(u) + fin(d));
  let q_lin = mean(fin(ul) + fin(ur) + fin(dl) + fin(dr));
  return vec3f(c, select(g_lin, g, ok), select(q_lin, q, ok));
}

// Green site: (chroma of its row, G, chroma of its column).
fn mhc_green(c: f32, l: f32, r: f32, u: f32, d: f32, l2: f32, r2: f32, u2: f32, d2: f32, ul: f32, ur: f32, dl: f32, dr: f32) -> vec3f {
  let diag = ul + ur + dl + dr;
  let p = (5.0 * c + 4.0 * (l + r) - diag - (l2 + r2) + 0.5 * (u2 + d2)) * 0.125;
  let q = (5.0 * c + 4.0 * (u + d) - diag - (u2 + d2) + 0.5 * (l2 + r2)) * 0.125;
  let ok = all_finite(c, l, r, u, d, l2, r2, u2, d2, ul, ur, dl, dr);
  let p_lin = mean(fin(l) + fin(r));
  let q_lin = mean(fin(u) + fin(d));
  return vec3f(select(p_lin, p, ok), c, select(q_lin, q, ok));
}

fn put(x: i32, y: i32, rgb: vec3f) {
  let yl = y - i32(params.y0);
  if (x < 0 || x >= i32(params.width) || yl < 0 || yl >= i32(params.rows)) {
    return;
  }
  let i = u32(yl) * params.width + u32(x);
  out_r[i] = rgb.x;
  out_g[i] = rgb.y;
  out_b[i] = rgb.z;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  if (gid.x >= params.cells_x) {
    return;
  }
  let w = i32(params.width);
  // Red site of this cell; green at (ox+1, oy) and (ox, oy+1), blue at (ox+1, oy+1).
  let ox = 2 * i32(gid.x) - i32(params.rx);
  let oy = params.cell_y0 + 2 * i32(gid.y);
  // vCR: column ox-2+C, row oy-2+R; only the taps some site needs are loaded.
  let c0 = reflect(ox - 2, w);
  let c1 = reflect(ox - 1, w);
  let c2 = reflect(ox, w);
  let c3 = reflect(ox + 1, w);
  let c4 = reflect(ox + 2, w);
  let c5 = reflect(ox + 3, w);
  let b0 = row_base(oy - 2);
  let b1 = row_base(oy - 1);
  let b2 = row_base(oy);
  let b3 = row_base(oy + 1);
  let b4 = row_base(oy + 2);
  let b5 = row_base(oy + 3);
  let v20 = load(b0, c2);
  let v30 = load(b0, c3);
  let v11 = load(b1, c1);
  let v21 = load(b1, c2);
  let v31 = load(b1, c3);
  let v41 = load(b1, c4);
  let v02 = load(b2, c0);
  let v12 = load(b2, c1);
  let v22 = load(b2, c2);
  let v32 = load(b2, c3);
  let v42 = load(b2, c4);
  let v52 = load(b2, c5);
  let v03 = load(b3, c0);
  let v13 = load(b3, c1);
  let v23 = load(b3, c2);
  let v33 = load(b3, c3);
  let v43 = load(b3, c4);
  let v53 = load(b3, c5);
  let v14 = load(b4, c1);
  let v24 = load(b4, c2);
  let v34 = load(b4, c3);
  let v44 = load(b4, c4);
  let v25 = load(b5, c2);
  let v35 = load(b5, c3);
  // Taps in the order c, l, r, u, d, l2, r2, u2, d2, ul, ur, dl, dr.
  let s22 = mhc_chroma(v22, v12, v32, v21, v23, v02, v42, v20, v24, v11, v31, v13, v33);
  let s32 = mhc_green(v32, v22, v42, v31, v33, v12, v52, v30, v34, v21, v41, v23, v43);
  let s23 = mhc_green(v23, v13, v33, v22, v24, v03, v43, v21, v25, v12, v32, v14, v34);
  let s33 = mhc_chroma(v33, v23, v43, v32, v34, v13, v53, v31, v35, v22, v42, v24, v44);
  put(ox, oy, s22);                                 // red: (R, G, B)
  put(ox + 1, oy, s32);                             // green in the red row: (R, G, B)
  put(ox, oy + 1, vec3f(s23.z, s23.y, s23.x));      // green in the blue row: (B, G, R) -> (R, G, B)
  put(ox + 1, oy + 1, vec3f(s33.z, s33.y, s33.x));  // blue: (B, G, R) -> (R, G, B)
}
