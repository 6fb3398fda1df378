// stacking/gather_window_common: the uniform block and bindings shared by gather_window.wgsl
// (one f32 per invocation) and gather_window_vec4.wgsl (vec4 runs); every count and offset is
// in the including kernel's element `Elem` (u32, or vec4u), which it declares as an alias.

struct Params {
  cols: u32,        // window width
  rows: u32,        // rows per frame in the window
  frames: u32,      // frames of this dispatch
  x0: u32,          // first column of the window within a slot row
  src_first: u32,   // element of frame 0's row 0, column 0 in the src binding
  src_frame: u32,   // elements per frame in src (slot rows x width)
  src_row: u32,     // elements per slot row (the band's width)
  dst_first: u32,   // element of frame 0's window in dst
  total: u32,       // invocations of the dispatch
  grid_x: u32,      // invocations per grid row
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<Elem>;
@group(0) @binding(2) var<storage, read_write> dst: array<Elem>;

