// decode/float32: FITS BITPIX -32 samples, uploaded as the file's raw big-endian bytes, to
// f32 physical values: out = bzero + bscale * stored (FITS allows scaling of float data).
// Bindings: 0 uniform Params; 1 read-only array<vec4u> words (one big-endian IEEE single per
//           u32 word, in file order; ceil(count / 4) vec4, lanes past count ignored);
//           2 read_write array<f32> out (count values).
// Workgroup: WG x 1 x 1 invocations, 4 samples (one vec4u load) per invocation; 2-D grid
//            (x = row of workgroups, y = rows of the grid) to stay under 65535.
// Precision: with BSCALE 1 and BZERO 0 (scaled = 0) the bits are copied unchanged (exact,
//            signed zeros and subnormals kept: no float arithmetic that could flush them);
//            otherwise fma(bscale, stored, bzero): <= 1 ulp of |bscale * stored| + |bzero|.
// No-data: NaN (any payload) and +-Inf pass through unchanged, also when scaled (tested on the
//          bits: WGSL may assume floats are finite). FITS has no BLANK for float data.

struct Params {
  count: u32,   // samples to decode
  scaled: u32,  // 0: identity (BSCALE 1, BZERO 0), copy the bits
  grid_x: u32,  // invocations per grid row (workgroups in x * WG)
  bscale: f32,
  bzero: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> words: array<vec4u>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

override WG: u32 = 64;

fn bswap(w: vec4u) -> vec4u {
  return (w << vec4u(24u)) | ((w << vec4u(8u)) & vec4u(0xff0000u)) | ((w >> vec4u(8u)) & vec4u(0xff00u)) | (w >> vec4u(24u));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.y * params.grid_x + gid.x;
  let first = j * 4u;
  if (first >= params.count) {
    return;
  }
  let bits = bswap(words[j]);
  var v = bitcast<vec4f>(bits);
  if (params.scaled == 1u) {
    let finite = (bits & vec4u(0x7f800000u)) != vec4u(0x7f800000u);
    v = select(v, fma(vec4f(params.bscale), v, vec4f(params.bzero)), finite);
  }
  let n = min(4u, params.count - first);
  for (var i = 0u; i < n; i++) {
    out[first + i] = v[i];
  }
}
