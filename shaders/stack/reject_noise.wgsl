// stack/reject_noise: rejection that keeps signal. Per pixel of a band of N registered frames:
// normalisation v' = v * scale[f] + offset[f], rejection with bounds from a noise model with a
// seeing term (not from the samples' spread), weighted mean of the survivors, survivor count
// and exact per-frame counts of low- and high-rejected samples. The method, its justification
// and the exact contract are in the TypeScript reference src/cpu/reject-noise.ts; in short, at
// centre c with S = max(c - B, 0):
//   tau_f = sqrt(sigma2_f + poisson_f * S + alpha2_f * S * S),
//   reject f when v_f < c - k_low * tau_f or v_f > c + k_high * tau_f;
//   METHOD 0 sigma:  c from the per-pixel start centre (NaN: weighted mean), iterate: survivors'
//                    weighted mean becomes c, until a fixed point (same count and sum), max_iters,
//                    or fewer than min_keep survivors (that step refused);
//   METHOD 1 winsor: max_iters Huber steps c += sum w * clamp(v - c, +-winsor_k * tau) / sum w,
//                    then one rejection at c under the min_keep rule.
// Bindings: 0 uniform Params;
//           1 read-only src, f32 frame-major: frame f, band row r, column x at
//             (f * src_rows + src_row0 + r) * width + x (the stack kernel's layout);
//           2 read-only frame, vec4<f32> pairs per frame: [2f] = (scale, offset, weight,
//             sigma2; sigma2 < 0: noise unknown, never reject this frame), [2f + 1] =
//             (poisson, alpha2, 0, 0);
//           3 read-only centre, f32 per pixel (rows x width): start centre, NaN = none;
//           4 read-only background, f32 per pixel: sky B under the pixel, NaN -> S = 0;
//           5 read_write mean, f32 per pixel (NaN where no valid sample carries weight);
//           6 read_write count, u32 survivors per pixel;
//           7 read_write rejected, atomic u32: [0, N) low, [N, 2N) high per frame; ADDED to
//             (the caller zeroes it), so the bands of an image accumulate on the device.
// Workgroup: WG x 1 x 1 (override), one pixel per invocation; grid x = ceil(width / WG),
//            y = rows of this dispatch (row_base offsets a dispatch covering part of a band).
// Precision: f32, sums in frame order; the reference computes in f64, so the two may disagree
//            where a sample lies within rounding distance of a bound (counted in the tests).
// No-data: NaN samples are ignored by every sum, count, bound and tally; a pixel without a
//          valid sample gives mean NaN and count 0. Rejections are rare, so each is one
//          atomicAdd on the global tallies.

struct Params {
  width: u32,
  rows: u32,
  frames: u32,
  max_iters: u32,
  k_low: f32,
  k_high: f32,
  min_fraction: f32,
  winsor_k: f32,
  src_rows: u32,
  src_row0: u32,
  row_base: u32,
  pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> frame: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> centre: array<f32>;
@group(0) @binding(4) var<storage, read> background: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> count_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> rejected: array<atomic<u32>>;

override WG: u32 = 64;
// 0 sigma, 1 winsor (pipeline constant, so the unused path compiles away).
override METHOD: u32 = 0u;

var<private> NAN_BITS: u32 = 0x7fc00000u;

// NaN test on the bits: comparisons with NaN may be folded away by shader compilers.
fn is_nan(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

var<private> pix_base: u32;

fn sample(f: u32) -> f32 {
  let raw = src[(f * params.src_rows + params.src_row0) * params.width + pix_base];
  let p = frame[2u * f];
  return fma(raw, p.x, p.y);
}

// Expected spread tau of frame f's sample at signal s; -1 when the frame is never rejected.
fn tau(f: u32, s: f32) -> f32 {
  let p = frame[2u * f];
  let q = frame[2u * f + 1u];
  return select(sqrt(p.w + q.x * s + q.y * s * s), -1.0, p.w < 0.0);
}

fn signal(c: f32, b: f32) -> f32 {
  return select(max(c - b, 0.0), 0.0, is_nan(b));
}

struct Kept {
  n: u32,
  sw: f32,
  swv: f32,
}

fn kept(c: f32, s: f32) -> Kept {
  var k = Kept(0u, 0.0, 0.0);
  for (var f = 0u; f < params.frames; f++) {
    let v = sample(f);
    if (is_nan(v)) {
      continue;
    }
    let t = tau(f, s);
    let inside = t < 0.0 || (v >= c - params.k_low * t && v <= c + params.k_high * t);
    if (inside) {
      let w = frame[2u * f].z;
      k.n += 1u;
      k.sw += w;
      k.swv += w * v;
    }
  }
  return k;
}

fn tally(c: f32, s: f32) {
  let n = params.frames;
  for (var f = 0u; f < n; f++) {
    let v = sample(f);
    let t = tau(f, s);
    if (is_nan(v) || t < 0.0) {
      continue;
    }
    if (v < c - params.k_low * t) {
      atomicAdd(&rejected[f], 1u);
    } else if (v > c + params.k_high * t) {
      atomicAdd(&rejected[n + f], 1u);
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let x = gid.x;
  let r = params.row_base + gid.y;
  if (x >= params.width || r >= params.rows) {
    return;
  }
  pix_base = r * params.width + x;
  let out_i = r * params.width + x;
  var nv = 0u;
  var sw = 0.0;
  var swv = 0.0;
  for (var f = 0u; f < params.frames; f++) {
    let v = sample(f);
    if (!is_nan(v)) {
      let w = frame[2u * f].z;
      nv += 1u;
      sw += w;
      swv += w * v;
    }
  }
  if (!(nv > 0u && sw > 0.0)) {
    mean_out[out_i] = bitcast<f32>(NAN_BITS);
    count_out[out_i] = nv;
    return;
  }
  let m0 = swv / sw;
  let b = background[out_i];
  let c0 = centre[out_i];
  var c = select(c0, m0, is_nan(c0));
  let keep = max(1u, u32(ceil(f32(nv) * params.min_fraction)));
  var out_mean = m0;
  var out_count = nv;
  var bounded = false;
  var c_acc = 0.0;
  if (METHOD == 0u) {
    var prev_n = 0xffffffffu;
    var prev_s = 0.0;
    for (var it = 0u; it < params.max_iters; it++) {
      let k = kept(c, signal(c, b));
      if (!(k.n >= keep && k.sw > 0.0)) {
        break;
      }
      out_mean = k.swv / k.sw;
      out_count = k.n;
      bounded = true;
      c_acc = c;
      let fixed = k.n == prev_n && k.swv == prev_s;
      prev_n = k.n;
      prev_s = k.swv;
      if (fixed) {
        break;
      }
      c = out_mean;
    }
  } else {
    for (var it = 0u; it < params.max_iters; it++) {
      let s = signal(c, b);
      var acc = 0.0;
      for (var f = 0u; f < params.frames; f++) {
        let v = sample(f);
        if (is_nan(v)) {
          continue;
        }
        let t = tau(f, s);
        let d = select(clamp(v - c, -params.winsor_k * t, params.winsor_k * t), v - c, t < 0.0);
        acc += frame[2u * f].z * d;
      }
      c += acc / sw;
    }
    let k = kept(c, signal(c, b));
    if (k.n >= keep && k.sw > 0.0) {
      out_mean = k.swv / k.sw;
      out_count = k.n;
      bounded = true;
      c_acc = c;
    }
  }
  mean_out[out_i] = out_mean;
  count_out[out_i] = out_count;
  if (bounded && out_count < nv) {
    tally(c_acc, signal(c_acc, b));
  }
}
