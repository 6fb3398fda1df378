// debayer/bilinear: one CFA mosaic band (f32) to three planar f32 planes R, G, B for the band's
// owned rows. Same contract as src/cpu/debayer.ts: sites keep their own colour as measured;
// a missing colour is the mean of the 2 or 4 nearest same-colour neighbours; image borders
// reflect without repeating the edge (-1 -> 1, W -> W-2; a dimension of 1 has no neighbour
// there); non-finite neighbours are skipped.
// Bindings: 0 uniform Params; 1 read-only array<f32> mosaic rows read_y0 .. read_y0+read_rows-1
//           (full width, with one halo row each side of the owned rows where the image has
//           them); 2, 3, 4 read_write array<f32> R, G, B planes (rows x width each).
// Workgroup: WG x 1 x 1; one invocation per 2x2 cell whose top-left is a red site, so the
//            same code serves every pattern: the cell's origin is shifted by the red site's
//            parity (rx, and cell_y0 for rows), and pixels of a cell outside the image or the
//            owned rows are not written. Grid: x = ceil(cells_x / WG), y = cell rows. One cell
//            per invocation was 2x faster than one pixel per invocation on llvmpipe (14 loads
//            for 4 pixels instead of 9 each).
// Precision: f32 sums of 2 or 4 values divided by the count of finite ones (the reference sums
//            in f64 and rounds once, so results agree to a few f32 ulps of the neighbours).
// No-data: non-finite (NaN, ±Inf) neighbours are left out of a mean; a mean with no finite
//          neighbour is NaN. A NaN site value stays NaN in its own plane.

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

// Reflection without edge repeat; may stay out of range when n == 1 (checked by the caller).
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

// (value, 1) for a finite value, (0, 0) otherwise: summing these gives (sum, count).
// Bit test, because compilers may fold isnan-style comparisons away.
fn fin(v: f32) -> vec2f {
  return select(vec2f(0.0), vec2f(v, 1.0), (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u);
}

fn mean(s: vec2f) -> f32 {
  return select(bitcast<f32>(NAN_BITS), s.x / s.y, s.y > 0.0);
}

fn put(x: i32, y: i32, r: f32, g: f32, b: f32) {
  let yl = y - i32(params.y0);
  if (x < 0 || x >= i32(params.width) || yl < 0 || yl >= i32(params.rows)) {
    return;
  }
  let i = u32(yl) * params.width + u32(x);
  out_r[i] = r;
  out_g[i] = g;
  out_b[i] = b;
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
  let c0 = reflect(ox - 1, w);
  let c1 = reflect(ox, w);
  let c2 = reflect(ox + 1, w);
  let c3 = reflect(ox + 2, w);
  let b0 = row_base(oy - 1);
  let b1 = row_base(oy);
  let b2 = row_base(oy + 1);
  let b3 = row_base(oy + 2);
  // vCR: column ox-1+C, row oy-1+R. The corners (3,0) and (0,3) are never needed.
  let v00 = load(b0, c0);
  let v10 = load(b0, c1);
  let v20 = load(b0, c2);
  let v01 = load(b1, c0);
  let v11 = load(b1, c1);
  let v21 = load(b1, c2);
  let v31 = load(b1, c3);
  let v02 = load(b2, c0);
  let v12 = load(b2, c1);
  let v22 = load(b2, c2);
  let v32 = load(b2, c3);
  let v13 = load(b3, c1);
  let v23 = load(b3, c2);
  let v33 = load(b3, c3);
  let m00 = fin(v00);
  let m10 = fin(v10);
  let m20 = fin(v20);
  let m01 = fin(v01);
  let m11 = fin(v11);
  let m21 = fin(v21);
  let m31 = fin(v31);
  let m02 = fin(v02);
  let m12 = fin(v12);
  let m22 = fin(v22);
  let m32 = fin(v32);
  let m13 = fin(v13);
  let m23 = fin(v23);
  let m33 = fin(v33);
  // Red site (1,1).
  put(ox, oy, v11, mean(m01 + m21 + m10 + m12), mean(m00 + m20 + m02 + m22));
  // Green site in the red row (2,1): red from left/right, blue from up/down.
  put(ox + 1, oy, mean(m11 + m31), v21, mean(m20 + m22));
  // Green site in the blue row (1,2): blue from left/right, red from up/down.
  put(ox, oy + 1, mean(m11 + m13), v12, mean(m02 + m22));
  // Blue site (2,2).
  put(ox + 1, oy + 1, mean(m11 + m31 + m13 + m33), mean(m12 + m32 + m21 + m23), v22);
}
