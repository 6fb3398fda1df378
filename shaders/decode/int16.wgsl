// decode/int16: FITS BITPIX 16 samples, uploaded as the file's raw big-endian bytes, to f32
// physical values: out = bzero + bscale * stored, and NaN where stored == BLANK.
// Bindings: 0 uniform Params; 1 read-only array<u32> (two big-endian int16 per word, in file
//           order; an odd count leaves the last half-word unused); 2 read_write array<f32> out.
// Workgroup: WG x 1 x 1 invocations, one u32 word (two samples) per invocation; the dispatch
//            grid is 2-D (x = row of workgroups, y = rows of the grid) to stay under 65535.
// Precision: f32 fma of bzero + bscale * stored; exact for the unsigned convention
//            (BZERO 32768, BSCALE 1) and any integral result below 2^24.
// No-data: BLANK (when has_blank = 1) maps to quiet NaN.

struct Params {
  count: u32,      // samples to decode
  has_blank: u32,  // 1 when BLANK applies
  blank: i32,      // stored value marking missing data
  grid_x: u32,     // invocations per grid row (workgroups in x * WG)
  bscale: f32,
  bzero: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> words: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

override WG: u32 = 64;

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

fn physical(stored: i32) -> f32 {
  if (params.has_blank == 1u && stored == params.blank) {
    return bitcast<f32>(NAN_BITS);
  }
  return fma(params.bscale, f32(stored), params.bzero);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let w = gid.y * params.grid_x + gid.x;
  let first = w * 2u;
  if (first >= params.count) {
    return;
  }
  let word = words[w];
  // Bytes b0 b1 b2 b3 read little-endian: sample 0 is b0:b1, sample 1 is b2:b3.
  let s0 = ((word & 0xffu) << 8u) | ((word >> 8u) & 0xffu);
  let s1 = ((word >> 8u) & 0xff00u) | (word >> 24u);
  out[first] = physical(bitcast<i32>(s0 << 16u) >> 16u);
  if (first + 1u < params.count) {
    out[first + 1u] = physical(bitcast<i32>(s1 << 16u) >> 16u);
  }
}
