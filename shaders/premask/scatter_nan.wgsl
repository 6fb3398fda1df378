// stacking/scatter_nan: stores NaN at listed indices of an f32 buffer. STACKING's host pre-mask
// (on a software adapter) sends the few masked samples' slot indices instead of re-uploading
// every frame's slot; the stack then reads the slots in place.
// Bindings: 0 uniform Params; 1 read-only array<u32> indices (count entries from `first` are
//           used); 2 read_write array<f32> dst (the frame slots).
// Workgroup: WG x 1 x 1; grid x = ceil((count − first) / WG), at most the per-dimension limit
//            (the wrapper splits longer lists into dispatches with increasing `first`).
// Precision: exact (the quiet-NaN bit pattern is stored). Precondition (the caller's): every index
//            lies inside dst; robustness keeps a wrong one inside the binding but may land it on
//            another element, and the wrapper checks only the buffer sizes.

struct Params {
  count: u32,   // entries in `indices`
  first: u32,   // entry of global invocation 0
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> indices: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

override WG: u32 = 256;

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = params.first + gid.x;
  if (i < params.count) {
    dst[indices[i]] = bitcast<f32>(NAN_BITS);
  }
}
