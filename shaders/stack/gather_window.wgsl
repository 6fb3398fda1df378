// stacking/gather_window: copies a column window of a band of frame slots into a compact buffer.
// STACKING's host pre-mask (software adapter) brings a band back window by window when one row
// chunk of every frame would not fit its chunk bytes (many frames: 1000 frames x 2048 px x 12
// rows were 98 MB), so it needs each frame's rows [0, rows) x columns [x0, x0 + cols) packed.
// Bindings: 0 uniform Params; 1 read-only array<f32> src (a window of the slots holding frames
//           [0, frames) of this dispatch, frame f's first element at src_first + f·src_frame);
//           2 read_write array<f32> dst (frames x rows x cols from element dst_first).
// Workgroup: WG x 1 x 1 over the window's elements in order (frame, row, column), folded into a
//            2-D grid of grid_x invocations per grid row: one workgroup per window row left most
//            lanes idle and llvmpipe's per-workgroup cost dominated (40 000 workgroups per window).
// Precision: exact (bit copies, NaN payloads included: values move as u32 bits).
// No-data rule: none; out-of-range invocations store nothing.

alias Elem = u32;

// Params at @binding(0), src at @binding(1), dst at @binding(2):
//!include stack/gather_window_common.wgsl

override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.y * params.grid_x + gid.x;
  if (i >= params.total) {
    return;
  }
  let x = i % params.cols;
  let t = i / params.cols;
  let r = t % params.rows;
  let f = t / params.rows;
  let at = params.src_first + f * params.src_frame + r * params.src_row + params.x0 + x;
  dst[params.dst_first + i] = src[at];
}
