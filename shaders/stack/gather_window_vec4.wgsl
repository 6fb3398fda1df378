// stacking/gather_window_vec4: gather_window four columns per invocation. Copies a column window of a band of frame slots into a compact buffer.
// STACKING's host pre-mask (software adapter) brings a band back window by window when one row
// chunk of every frame would not fit its chunk bytes (many frames: 1000 frames x 2048 px x 12
// rows were 98 MB), so it needs each frame's rows [0, rows) x columns [x0, x0 + cols) packed.
// Bindings: 0 uniform Params; 1 read-only array<f32> src (a window of the slots holding frames
//           [0, frames) of this dispatch, frame f's first element at src_first + f·src_frame);
//           2 read_write array<f32> dst (frames x rows x cols from element dst_first).
// Every count and offset below is in vec4u (four f32 columns): the wrapper takes this kernel
// only when the width, the window's first column and width and the binding offsets are
// multiples of 4 columns (on llvmpipe one u32 per invocation cost ~6 ns per sample; a window of
// 1000 frames x 20 rows x 104 columns took ~13 ms).
// Workgroup: WG x 1 x 1 over the window's elements in order (frame, row, column), folded into a
//            2-D grid of grid_x invocations per grid row: one workgroup per window row left most
//            lanes idle and llvmpipe's per-workgroup cost dominated (40 000 workgroups per window).
// Precision: exact (bit copies, NaN payloads included: values move as u32 bits).
// No-data rule: none; out-of-range invocations store nothing.

alias Elem = vec4u;

// Params at @binding(0), src at @binding(1), dst at @binding(2):
//!include stack/gather_window_common.wgsl

override WG: u32 = 64;
override PER: u32 = 4;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.y * params.grid_x + gid.x;
  if (i >= params.total) {
    return;
  }
  // Invocation i copies up to PER vec4s of one window row: fewer, longer invocations (llvmpipe's
  // cost is per invocation more than per byte).
  let per_row = (params.cols + PER - 1u) / PER;
  let xc = (i % per_row) * PER;
  let t = i / per_row;
  let r = t % params.rows;
  let f = t / params.rows;
  let at = params.src_first + f * params.src_frame + r * params.src_row + params.x0 + xc;
  let to = params.dst_first + (f * params.rows + r) * params.cols + xc;
  let n = min(PER, params.cols - xc);
  for (var j = 0u; j < n; j++) {
    dst[to + j] = src[at + j];
  }
}
