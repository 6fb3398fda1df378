// stack/ln_apply: local normalization of a band of N registered frames, in place, before
// rejection and combination: v' = a(x, y)·v + b(x, y), with a and b interpolated from frame f's
// grid of nodes (src/algorithms/local-normalization.ts). TypeScript reference with the same
// contract: src/cpu/ln-apply.ts.
// Bindings: 0 uniform Params;
//           1 read_write band, f32 frame-major: frame f, band row r, column x at
//             (f * src_rows + src_row0 + r) * width + x (the stack kernel's layout; work slots
//             with halo rows are normalised in place by naming their rows);
//           2 read-only coef, vec2<f32> (a, b) per node: frame f, node (i, j) at
//             (f * ny + j) * nx + i. Every frame of a dispatch shares the grid geometry.
// Interpolation (the model's rule): fx = clamp((x - gx0) / gdx, -0.5, nx - 0.5),
//           i = clamp(floor(fx), 0, nx - 2), tx = fx - i (nx = 1: i = 0, tx = 0), likewise in
//           y with the image row y = y0 + r; a = mix(mix(a(i, j), a(i+1, j), tx),
//           mix(a(i, j+1), a(i+1, j+1), tx), ty), b likewise; linear beyond the outer nodes.
// Workgroup: WG x 1 x 1 (override), one pixel per invocation, all frames in a loop (the nodes
//            and weights are the same for every frame); grid x = ceil(width / WG), y = rows of
//            this dispatch (row_base offsets a dispatch that covers only part of a tall band).
// Precision: f32 throughout (geometry, weights, coefficients; a·v + b may fuse into an fma);
//            the reference differs by a few ulps of |a·v| + |b|.
// No-data: NaN samples stay NaN (not written).

struct Params {
  width: u32,
  rows: u32,      // rows of the band to normalise
  frames: u32,
  y0: u32,        // image row of band row 0
  nx: u32,
  ny: u32,
  src_rows: u32,  // rows per frame in `band`
  src_row0: u32,  // buffer row of band row 0
  gx0: f32,       // node (i, j) at (gx0 + i * gdx, gy0 + j * gdy), full-resolution pixels
  gy0: f32,
  gdx: f32,
  gdy: f32,
  row_base: u32,  // first band row of this dispatch
  pad0: u32,
  pad1: u32,
  pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> band: array<f32>;
@group(0) @binding(2) var<storage, read> coef: array<vec2<f32>>;

override WG: u32 = 64;

// Local normalization's node index and weight along one axis (ln_axis).
//!include stack/ln_axis.wgsl

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let x = gid.x;
  let r = params.row_base + gid.y;
  if (x >= params.width || r >= params.rows) {
    return;
  }
  // Nodes and weights once per pixel; then every frame's sample (frame-major: adjacent
  // invocations touch adjacent addresses of each frame).
  let ax = ln_axis(f32(x), params.gx0, params.gdx, params.nx);
  let ay = ln_axis(f32(params.y0 + r), params.gy0, params.gdy, params.ny);
  let i = u32(ax.x);
  let j = u32(ay.x);
  let i1 = min(i + 1u, params.nx - 1u);
  let j1 = min(j + 1u, params.ny - 1u);
  let nodes = params.ny * params.nx;
  let k00 = j * params.nx + i;
  let k10 = j * params.nx + i1;
  let k01 = j1 * params.nx + i;
  let k11 = j1 * params.nx + i1;
  let plane = params.src_rows * params.width;
  var idx = (params.src_row0 + r) * params.width + x;
  var base = 0u;
  for (var f = 0u; f < params.frames; f++) {
    let v = band[idx];
    // NaN test on the bits: comparisons with NaN may be folded away by shader compilers.
    if ((bitcast<u32>(v) & 0x7fffffffu) <= 0x7f800000u) {
      let ab = mix(mix(coef[base + k00], coef[base + k10], ax.y), mix(coef[base + k01], coef[base + k11], ax.y), ay.y);
      band[idx] = ab.x * v + ab.y;
    }
    idx += plane;
    base += nodes;
  }
}
