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
// Bindings: 0 uniform Params (binding 2's table appended as frame_u where it fits);
//           1 read-only src, f32 frame-major: frame f, band row r, column x at
//             (f * src_rows + src_row0 + r) * width + x (the stack kernel's layout);
//           2 read-only frame, vec4<f32> pairs per frame: [2f] = (scale, offset, weight,
//             sigma2; sigma2 < 0: noise unknown, never reject this frame), [2f + 1] =
//             (poisson, alpha2, 0, 0);
//             read only where the uniform has no copy (TABLE_U false: over ~2000 frames);
//           3 read-only centre, f32 per pixel (rows x width): start centre, NaN = none;
//           4 read-only background, f32 per pixel: sky B under the pixel, NaN -> S = 0;
//           5 read_write mean, f32 per pixel (NaN where no valid sample carries weight);
//           6 read_write count, u32 survivors per pixel;
//           7 read_write rejected, atomic u32: [0, N) low, [N, 2N) high per frame; ADDED to
//             (the caller zeroes it), so the bands of an image accumulate on the device.
// Vector variant (src/gpu/kernels/reject-noise.ts, width % 4 = 0): binding 1 is declared
//           array<vec4<f32>> and sample() loads a sample's 4 lanes at once (the wrapper
//           rewrites those two lines, which must stay as written).
// Workgroup: WG x 1 x 1 (override); an invocation owns 4 adjacent pixels of a row, the lanes of
//            a vec4 (lanes past the row end read NaN and write nothing): the per-frame
//            parameters are loaded once for 4 pixels and the arithmetic runs 4 wide; every
//            per-lane choice is a select(), the iteration loop ends when no lane is live.
//            Grid x = ceil(ceil(width / 4) / WG), y = rows of this dispatch (row_base offsets a
//            dispatch covering part of a band).
// Precision: f32, sums in frame order; bounds tested squared, (v - c)^2 <= k^2 tau^2 on c's
//            side (within()); the reference computes in f64 with tau, so the two may disagree
//            where a sample lies within rounding distance of a bound (counted in the tests).
// No-data: NaN samples are ignored by every sum, count, bound and tally; a pixel without a
//          valid sample gives mean NaN and count 0. Rejections are rare, so an invocation adds
//          its 4 lanes' count per frame straight to the global tallies (no workgroup stage).
// Sigma's first iteration is counted in the pass over the valid samples when every live lane
// has a start centre (the engine always passes the median), saving one pass over the frames.
//
// TEMPLATE. src/gpu/kernels/reject-noise.ts rewrites this source before compiling it, the way
// the stack kernel's wrapper does (and with its unroller): each line marked `@template NAME` is
// replaced by the wrapper's text for NAME; in RESIDENT mode each `for (var f = 0u; f < N; f++)
// { // @unroll` loop up to its `} // @end-unroll` is repeated N times with f a literal. Then
// the first pass reads a pixel's samples once into the private array v (normalised, NaN where
// the lane is outside the row) and every later pass (iterations, winsor steps, tallies) runs on
// v with constant indices, i.e. on registers: llvmpipe keeps dynamically indexed private arrays
// in per-lane memory, so without the unrolling the re-reads from storage were cheaper. Over
// RESIDENT_MAX_FRAMES the loops stay rolled and each pass re-reads the band (any N stays exact).
// The source as written is valid WGSL (N = 16, resident, loops rolled).

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
  // TABLE_U: binding 2's table (2 vec4 per frame) in the uniform too; a uniform read is a
  // scalar load on llvmpipe, a storage read a checked per-lane access in every pass. Else (a
  // table too large for the uniform binding) one unused entry, the table read from binding 2.
  frame_u: array<vec4<f32>, NFU>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> frame: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> centre: array<f32>;
@group(0) @binding(4) var<storage, read> background: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> count_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> rejected: array<atomic<u32>>;

// ---- template: begin ----
const N: u32 = 16u; // @template N: frames in this dispatch (params.frames must equal it)
const RESIDENT: bool = true; // @template RESIDENT: samples held in registers (else re-read per pass)
const NV: u32 = 16u; // @template NV: length of the register array (N when resident, else 1)
const NFU: u32 = 32u; // @template NFU: vec4 entries of the uniform's frame table (2N when TABLE_U, else 1)
const TABLE_U: bool = true; // @template TABLE_U: the frame table read from the uniform (fits its binding)
// ---- template: end ----

override WG: u32 = 64;
// 0 sigma, 1 winsor (pipeline constant, so the unused path compiles away).
override METHOD: u32 = 0u;

alias VF = vec4<f32>;
alias VU = vec4<u32>;
alias VB = vec4<bool>;

var<private> NAN_BITS: u32 = 0x7fc00000u;

fn nanv() -> VF {
  return VF(bitcast<f32>(NAN_BITS));
}

// NaN test on the bits: comparisons with NaN may be folded away by shader compilers.
fn is_nan(x: VF) -> VB {
  return (bitcast<VU>(x) & VU(0x7fffffffu)) > VU(0x7f800000u);
}

fn ones(m: VB) -> VU {
  return select(VU(0u), VU(1u), m);
}

// Index of lane 0 in a frame-0 row of the band, and which lanes lie inside the row.
var<private> pix_base: u32;
var<private> inrow: VB;

fn load_pixels(a: ptr<storage, array<f32>, read>, i: u32) -> VF {
  // Lanes past the row end read lane 0 (always inside) and are masked by the caller.
  return VF((*a)[i], (*a)[select(i, i + 1u, inrow.y)], (*a)[select(i, i + 2u, inrow.z)], (*a)[select(i, i + 3u, inrow.w)]);
}

// Frame f's table entries: (scale, offset, weight, sigma2) and (poisson, alpha2, 0, 0).
fn fp(f: u32) -> vec4<f32> {
  if (TABLE_U) {
    return params.frame_u[2u * f];
  }
  return frame[2u * f];
}

fn fq(f: u32) -> vec4<f32> {
  if (TABLE_U) {
    return params.frame_u[2u * f + 1u];
  }
  return frame[2u * f + 1u];
}

// Normalised samples of this invocation's pixels, read once (resident mode).
var<private> v: array<VF, NV>;

fn load_sample(f: u32) -> VF {
  let i = (f * params.src_rows + params.src_row0) * params.width + pix_base;
  let raw = VF(src[i], src[select(i, i + 1u, inrow.y)], src[select(i, i + 2u, inrow.z)], src[select(i, i + 3u, inrow.w)]);
  let p = fp(f);
  return select(nanv(), fma(raw, VF(p.x), VF(p.y)), inrow);
}

// Frame f's normalised samples: from registers when resident, else re-read from the band.
fn sample(f: u32) -> VF {
  if (RESIDENT) {
    return v[f];
  }
  return load_sample(f);
}

// Expected spread tau of frame f's sample at signal s per lane; negative when the frame is
// never rejected.
fn tau(f: u32, s: VF) -> VF {
  let p = fp(f);
  let q = fq(f);
  return select(sqrt(VF(p.w) + q.x * s + q.y * s * s), VF(-1.0), p.w < 0.0);
}

// Whether sample x lies within frame f's bounds at centre c (signal s). Compared squared,
// (x - c)^2 <= k^2 tau^2 with k by the side of c (same test for k, tau >= 0): no square root
// per sample and pass. NaN samples are never inside; a frame without noise estimate always is.
fn within(f: u32, x: VF, c: VF, s: VF) -> VB {
  let p = fp(f);
  let q = fq(f);
  let t2 = VF(p.w) + q.x * s + q.y * s * s;
  let d = x - c;
  let k2 = select(VF(params.k_low * params.k_low), VF(params.k_high * params.k_high), d > VF(0.0));
  return !is_nan(x) & (VB(p.w < 0.0) | (d * d <= k2 * t2));
}

fn signal(c: VF, b: VF) -> VF {
  return select(max(c - b, VF(0.0)), VF(0.0), is_nan(b));
}

struct Kept {
  n: VU,
  sw: VF,
  swv: VF,
}

fn kept(c: VF, s: VF) -> Kept {
  var k = Kept(VU(0u), VF(0.0), VF(0.0));
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let inside = within(f, x, c, s);
    let w = fp(f).z;
    k.n += ones(inside);
    k.sw += select(VF(0.0), VF(w), inside);
    k.swv += select(VF(0.0), w * x, inside);
  } // @end-unroll
  return k;
}

// Adds the samples outside the bounds at c of the lanes in `lanes` to the per-frame tallies.
fn tally(c: VF, s: VF, lanes: VB) {
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let out = lanes & !is_nan(x) & !within(f, x, c, s);
    let lo = dot(ones(out & (x < c)), VU(1u));
    let hi = dot(ones(out & (x > c)), VU(1u));
    if (lo != 0u) {
      atomicAdd(&rejected[f], lo);
    }
    if (hi != 0u) {
      atomicAdd(&rejected[N + f], hi);
    }
  } // @end-unroll
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let x0 = gid.x * 4u;
  let r = params.row_base + gid.y;
  if (x0 >= params.width || r >= params.rows) {
    return;
  }
  inrow = VU(x0) + VU(0u, 1u, 2u, 3u) < VU(params.width);
  pix_base = r * params.width + x0;
  let b = select(VF(0.0), load_pixels(&background, pix_base), inrow);
  let c0 = select(nanv(), load_pixels(&centre, pix_base), inrow);
  // The valid samples' sums, and (sigma) the first iteration's survivors at the start centre in
  // the same pass: the engine always has the median, so this saves one pass over the frames.
  let s0 = signal(c0, b);
  var nv = VU(0u);
  var sw = VF(0.0);
  var swv = VF(0.0);
  var k0 = Kept(VU(0u), VF(0.0), VF(0.0));
  for (var f = 0u; f < N; f++) { // @unroll
    let x = load_sample(f);
    if (RESIDENT) {
      v[f] = x;
    }
    let ok = !is_nan(x);
    let w = fp(f).z;
    nv += ones(ok);
    sw += select(VF(0.0), VF(w), ok);
    swv += select(VF(0.0), w * x, ok);
    if (METHOD == 0u) {
      let inside = within(f, x, c0, s0);
      k0.n += ones(inside);
      k0.sw += select(VF(0.0), VF(w), inside);
      k0.swv += select(VF(0.0), w * x, inside);
    }
  } // @end-unroll
  let valid = (nv > VU(0u)) & (sw > VF(0.0));
  let m0 = swv / sw;
  let from_median = !is_nan(c0);
  var c = select(c0, m0, !from_median);
  let keep = max(VU(1u), VU(ceil(VF(nv) * params.min_fraction)));
  var out_mean = m0;
  var out_count = nv;
  var bounded = VB(false);
  var c_acc = VF(0.0);
  if (METHOD == 0u) {
    var prev_n = VU(0xffffffffu);
    var prev_s = VF(0.0);
    var live = valid;
    for (var it = 0u; it < params.max_iters; it++) {
      if (!any(live)) {
        break;
      }
      var k = k0;
      if (it > 0u || !all(from_median | !live)) {
        k = kept(c, signal(c, b));
      }
      // Per lane: a refused step (too few survivors or no weight) ends that lane's iteration.
      let ok = live & (k.n >= keep) & (k.sw > VF(0.0));
      let m = k.swv / k.sw;
      out_mean = select(out_mean, m, ok);
      out_count = select(out_count, k.n, ok);
      bounded = bounded | ok;
      c_acc = select(c_acc, c, ok);
      let fixed = ok & (k.n == prev_n) & (k.swv == prev_s);
      prev_n = select(prev_n, k.n, ok);
      prev_s = select(prev_s, k.swv, ok);
      live = ok & !fixed;
      c = select(c, m, live);
    }
  } else {
    for (var it = 0u; it < params.max_iters; it++) {
      let s = signal(c, b);
      var acc = VF(0.0);
      for (var f = 0u; f < N; f++) { // @unroll
        let x = sample(f);
        let t = tau(f, s);
        let d = select(clamp(x - c, -params.winsor_k * t, params.winsor_k * t), x - c, t < VF(0.0));
        acc += select(VF(0.0), fp(f).z * d, !is_nan(x));
      } // @end-unroll
      c += acc / sw;
    }
    let k = kept(c, signal(c, b));
    let ok = valid & (k.n >= keep) & (k.sw > VF(0.0));
    out_mean = select(out_mean, k.swv / k.sw, ok);
    out_count = select(out_count, k.n, ok);
    bounded = ok;
    c_acc = c;
  }
  out_mean = select(nanv(), out_mean, valid);
  for (var l = 0u; l < 4u; l++) {
    if (inrow[l]) {
      mean_out[pix_base + l] = out_mean[l];
      count_out[pix_base + l] = out_count[l];
    }
  }
  let lanes = bounded & (out_count < nv) & inrow;
  if (any(lanes)) {
    tally(c_acc, signal(c_acc, b), lanes);
  }
}
