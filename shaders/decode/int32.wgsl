// decode/int32: FITS BITPIX 32 samples, uploaded as the file's raw big-endian bytes, to f32
// physical values: out = bzero + bscale * stored, and NaN where stored == BLANK.
// Bindings: 0 uniform Params; 1 read-only array<vec4u> words (one big-endian int32 per u32
//           word, in file order; ceil(count / 4) vec4, lanes past count ignored);
//           2 read_write array<f32> out (count values).
// Workgroup: WG x 1 x 1 invocations, 4 samples (one vec4u load) per invocation; the dispatch
//            grid is 2-D (x = row of workgroups, y = rows of the grid) to stay under 65535.
// Precision: stored = hi * 65536 + lo with hi = stored >> 16 (arithmetic) and lo = stored &
//            0xffff, both exact in f32; out = fma(bscale, lo, fma(bscale * 65536, hi, bzero)).
//            With BSCALE 1 and BZERO a multiple of 65536 (the signed convention 0 and the
//            unsigned convention 2^31 included) the inner term is exact and the result is the
//            physical value correctly rounded to f32: exact below 2^24, and within half an
//            f32 ulp above (ulp 256 for values in [2^31, 2^32)): f32 cannot hold every uint32.
//            Other scalings: <= 2 ulp of |bzero| + |bscale * stored|.
// No-data: BLANK (when has_blank = 1) maps to quiet NaN.

struct Params {
  count: u32,      // samples to decode
  has_blank: u32,  // 1 when BLANK applies
  blank: i32,      // stored value marking missing data
  grid_x: u32,     // invocations per grid row (workgroups in x * WG)
  bscale: f32,
  bzero: f32,
  bscale_hi: f32,  // bscale * 65536 (exact)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> words: array<vec4u>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

override WG: u32 = 64;

// Quiet-NaN bits; a private variable because WGSL rejects NaN in constant expressions.
var<private> NAN_BITS: u32 = 0x7fc00000u;

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
  let stored = bitcast<vec4i>(bswap(words[j]));
  let hi = vec4f(stored >> vec4u(16u));
  let lo = vec4f(stored & vec4i(0xffff));
  var v = fma(vec4f(params.bscale), lo, fma(vec4f(params.bscale_hi), hi, vec4f(params.bzero)));
  if (params.has_blank == 1u) {
    v = select(v, vec4f(bitcast<f32>(NAN_BITS)), stored == vec4i(params.blank));
  }
  let n = min(4u, params.count - first);
  for (var i = 0u; i < n; i++) {
    out[first + i] = v[i];
  }
}
