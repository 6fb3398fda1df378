// device/release_bindings: binds a small buffer at every storage binding point of the device and
// stores one marker word into each. On Dawn's OpenGL ES backend (Mesa llvmpipe) a destroyed
// buffer keeps its memory while the GL context still has it bound at an indexed binding point,
// i.e. until a later dispatch binds something else there; one dispatch of this kernel after the
// buffer pool is trimmed returns that memory at once instead of in whichever phase next uses
// the device (measured: a master combine's 120 MiB held from CALIBRATION to STACKING).
// Bindings: 0 uniform Params; 1..S read_write array<u32> slot_k, S = the device's
//           maxStorageBuffersPerShaderStage (the wrapper, src/gpu/kernels/release-bindings.ts,
//           expands the `//@SLOTS` line into bindings 2..S and `//@MARKS` into their stores).
// Workgroup: 1 x 1 x 1, grid 1 x 1 x 1 (one invocation: the work is the binding, not the store).
// Precision: exact (u32 stores). No-data rule: none (no image data is read or written).
// Contract: slot_k[0] = marker + k for every k in 1..S; nothing else is written (the TypeScript
//           reference is releaseBindingsMarks in the wrapper).

struct Params {
  marker: u32,  // added to each binding's index, so a test can tell this dispatch's stores apart
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> slot_1: array<u32>;
//@SLOTS

@compute @workgroup_size(1)
fn main() {
  // Every binding is stored to: a binding the shader never uses could be dropped by the
  // compiler, and Dawn would then have no reason to bind it.
  slot_1[0] = params.marker + 1u;
  //@MARKS
}
