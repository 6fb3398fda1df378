// stack/stack.wgsl: per-pixel stacking of N registered frames of one band of rows:
// per-frame normalisation v' = v * scale[f] + offset[f], rejection (none | kappa-sigma |
// winsorized sigma | median), weighted mean of the survivors, survivor count per pixel and
// exact per-frame counts of low- and high-rejected samples.
//
// Bindings: 0 uniform Params (48-byte header + scale/offset/weight, 12 bytes per frame);
//           1 read-only src, f32 frame-major: frame f, band row r, column x at
//             (f * src_rows + src_row0 + r) * width + x (declared array<VF> when width % K == 0,
//             else array<f32>); src_rows = rows, src_row0 = 0 for a compact band, or the rows of
//             a larger band whose rows src_row0 .. src_row0 + rows are stacked (work slots with
//             halo rows, read in place);
//           2 read_write mean, f32 per pixel (NaN where no survivor carries weight);
//           3 read_write count, u32 survivors per pixel;
//           4 read_write array<atomic<u32>> rejected: [0, N) low, [N, 2N) high per frame;
//             ADDED to (the caller zeroes it), so the bands of an image accumulate on the device.
// Workgroup: WG x 1 x 1; an invocation owns K adjacent pixels (the lanes of a VF vector) in
//            each of RPI consecutive rows; grid x = ceil(ceil(width / K) / WG), grid y =
//            ceil(rows / RPI) (row0 offsets a dispatch that covers only part of a tall band).
// Precision: f32 throughout, sums in frame order. Sigma is the weighted population sigma of the
//            current survivors; after the first (two-pass) one it comes from moments about
//            the previous centre, which stays close, so E[d^2] - E[d]^2 does not cancel badly.
// No-data: NaN samples (and lanes past the row end) are ignored by every sum, count, bound,
//          tally and median; a pixel without valid samples gives mean NaN and count 0.
//
// Algorithms (the TypeScript reference src/cpu/stack.ts has the same contract):
// - none:   weighted mean of the valid samples.
// - sigma:  centre m = weighted mean of the survivors (the median is not used: it costs a sort
//           per iteration, and the cumulative-bounds form below is what reaches the speed
//           target). Start with all valid samples; each of at most max_iters iterations
//           narrows the cumulative bounds L = max(L, m - k_low*s), H = min(H, m + k_high*s)
//           and takes count, weight and moments of the samples in [L, H] in one pass. The
//           narrowing is refused (clipping stops) when fewer than
//           min_keep = max(1, ceil(f32(min_fraction) * valid)) samples, or no weight, would
//           remain. A pixel stops once an iteration rejects nothing new (a fixed point).
// - winsor: robust centre/sigma by max_iters winsorization steps (samples beyond
//           m +- winsor_k*s replaced by those bounds; m = weighted mean and s = winsor_c *
//           weighted sigma of the winsorized set; winsor_c = 1.134 for winsor_k = 1.5 makes s
//           consistent for Gaussian data), then one rejection against
//           [m - k_low*s, m + k_high*s] under the same min_keep rule.
// - median: median of the valid samples (mean of the two middle ones for an even count),
//           found exactly by a 32-step bisection on order-preserving u32 keys; weights unused.
// Branch-free within an invocation: every per-lane choice is a select(); the only data-
// dependent branches are the sigma loop's exit and the skip of atomics with nothing to add.
//
// TEMPLATE. src/gpu/kernels/stack.ts rewrites this source before compiling it:
//   (a) each line marked `@template NAME` is replaced by the wrapper's text for NAME;
//   (b) in RESIDENT mode only, each loop `for (var i = 0u; i < N; i++) { // @unroll` (or
//       `i < RPI`) up to its matching `} // @end-unroll` is repeated N (RPI) times with i
//       replaced by a literal. Unrolled, every v[f] and frame-parameter index is a constant,
//       so the samples live in registers (llvmpipe keeps dynamically indexed private arrays
//       over ~16 entries in per-lane memory, ~4x slower, and runs even a one-trip runtime
//       loop around the row body ~1.7x slower).
// The source as written is valid WGSL (N = 16, K = 4, RPI = 2, vector I/O, loops rolled).
// N, K, RPI, RESIDENT and the I/O types shape the code, so they are template values; the
// tunables that do not (WG, METHOD) are pipeline-overridable constants.

// ---- template: begin (values; the LOAD and STORE lines further down are template lines too) ----
const N: u32 = 16u; // @template N: frames in this dispatch
const RESIDENT: bool = true; // @template RESIDENT: frames held in registers (else re-read per pass)
const NV: u32 = 16u; // @template NV: length of the register arrays (N when resident, else 1)
alias VF = vec4<f32>; // @template VF: K lanes of f32
alias VU = vec4<u32>; // @template VU: K lanes of u32
alias VB = vec4<bool>; // @template VB: K lanes of bool
const K: u32 = 4u; // @template K: pixels per invocation (2 or 4)
// Band rows per invocation: tallies collect in registers over RPI rows before any atomic.
// WG * K * RPI must stay below 65536 (16-bit halves of the packed tallies).
const RPI: u32 = 2u; // @template RPI
// I/O element types: VF/VU (one vector access per K pixels) when width % K == 0, else f32/u32.
alias SRC_T = VF; // @template SRC_T
alias MEAN_T = VF; // @template MEAN_T
alias COUNT_T = VU; // @template COUNT_T
// ---- template: end ----

override WG: u32 = 64;
// 0 none, 1 sigma, 2 winsor, 3 median (pipeline-constant, so unused paths compile away).
override METHOD: u32 = 1u;

// Per-frame parameters packed 12 bytes per frame: scale at [f], offset at [N + f], weight at [2N + f].
const NP: u32 = (3u * N + 3u) / 4u;

struct Params {
  width: u32,
  rows: u32,          // rows of the band held in src
  row0: u32,          // first band row of this dispatch (grid row y handles row0 + y * RPI ...)
  max_iters: u32,
  k_low: f32,
  k_high: f32,
  min_fraction: f32,
  winsor_k: f32,
  winsor_c: f32,
  src_rows: u32,      // rows per frame in src (>= src_row0 + rows)
  src_row0: u32,      // src row of band row 0
  frame: array<vec4<f32>, NP>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<SRC_T>;
@group(0) @binding(2) var<storage, read_write> mean_out: array<MEAN_T>;
@group(0) @binding(3) var<storage, read_write> count_out: array<COUNT_T>;
@group(0) @binding(4) var<storage, read_write> rejected: array<atomic<u32>>;

// Per-workgroup rejection tallies, low count in bits 0..15 and high count in 16..31
// (at most WG * K * RPI < 65536 samples per frame per workgroup, so the halves cannot carry).
var<workgroup> wg_rej: array<atomic<u32>, N>;

// Normalised samples and this invocation's packed tallies over its rows (resident mode).
var<private> v: array<VF, NV>;
var<private> tally: array<VU, NV>;
// Median (resident mode): the samples' order-preserving keys, NaN as 0xffffffff (see stack_median).
var<private> keys: array<VU, NV>;
// Index of this invocation's first pixel in frame 0, and which lanes lie inside the row.
var<private> base0: u32;
var<private> inrow: VB;

// WGSL rejects NaN and infinities in constant expressions: keep their bits in private variables.
var<private> NAN_BITS: u32 = 0x7fc00000u;
var<private> INF_BITS: u32 = 0x7f800000u;

fn nanv() -> VF {
  return VF(bitcast<f32>(NAN_BITS));
}

fn infv() -> VF {
  return VF(bitcast<f32>(INF_BITS));
}

fn fparam(i: u32) -> f32 {
  return params.frame[i >> 2u][i & 3u];
}

// NaN-safe max/min: a NaN candidate leaves `a` unchanged (WGSL max/min leave NaN unspecified).
fn maxv(a: VF, b: VF) -> VF {
  return select(a, b, b > a);
}

fn minv(a: VF, b: VF) -> VF {
  return select(a, b, b < a);
}

fn ones(m: VB) -> VU {
  return select(VU(0u), VU(1u), m);
}

fn hsum(u: VU) -> u32 {
  return dot(u, VU(1u));
}

// Raw samples of frame f at this invocation's K pixels; lanes outside the band read NaN.
fn load_raw(f: u32) -> VF {
  let i = base0 + (params.src_row0 + f * params.src_rows) * params.width;
  let r = src[i / K]; // @template LOAD
  return select(nanv(), r, inrow);
}

fn store(i: u32, mean: VF, count: VU) {
  if (inrow[0]) { mean_out[i / K] = mean; count_out[i / K] = count; } // @template STORE
}

fn load_norm(f: u32) -> VF {
  return fma(load_raw(f), VF(fparam(f)), VF(fparam(N + f)));
}

// Normalised samples of frame f: from registers when resident, else re-read.
fn sample(f: u32) -> VF {
  if (RESIDENT) {
    return v[f];
  }
  return load_norm(f);
}

fn weight(f: u32) -> VF {
  return VF(fparam(2u * N + f));
}

// Order-preserving u32 key of an f32 (negative values flipped, positive ones sign-set).
fn key(x: VF) -> VU {
  let b = bitcast<VU>(x);
  return b ^ select(VU(0x80000000u), VU(0xffffffffu), (b & VU(0x80000000u)) != VU(0u));
}

fn unkey(k: VU) -> VF {
  return bitcast<VF>(k ^ select(VU(0xffffffffu), VU(0x80000000u), (k & VU(0x80000000u)) != VU(0u)));
}

// Sums over the samples inside [lo, hi] (NaN never is).
struct Sums {
  n: VU,
  sw: VF,
  swv: VF,
}

fn sums_in(lo: VF, hi: VF) -> Sums {
  var s = Sums(VU(0u), VF(0.0), VF(0.0));
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let w = weight(f);
    let inside = (x >= lo) & (x <= hi);
    s.n += ones(inside);
    s.sw += select(VF(0.0), w, inside);
    s.swv += select(VF(0.0), w * x, inside);
  } // @end-unroll
  return s;
}

fn sums_valid() -> Sums {
  var s = Sums(VU(0u), VF(0.0), VF(0.0));
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let w = weight(f);
    let ok = x == x;
    s.n += ones(ok);
    s.sw += select(VF(0.0), w, ok);
    s.swv += select(VF(0.0), w * x, ok);
  } // @end-unroll
  return s;
}

fn sq_dev_valid(m: VF) -> VF {
  var ss = VF(0.0);
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let d = x - m;
    ss += select(VF(0.0), weight(f) * d * d, x == x);
  } // @end-unroll
  return ss;
}

// Weighted moments about m of the samples inside [lo, hi]: count, sum w, sum w d, sum w d^2 (d = x - m).
struct Moments {
  n: VU,
  sw: VF,
  sd: VF,
  sd2: VF,
}

fn moments_in(lo: VF, hi: VF, m: VF) -> Moments {
  var s = Moments(VU(0u), VF(0.0), VF(0.0), VF(0.0));
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let w = weight(f);
    let inside = (x >= lo) & (x <= hi);
    let d = select(VF(0.0), x - m, inside);
    let wd = w * d;
    s.n += ones(inside);
    s.sw += select(VF(0.0), w, inside);
    s.sd += wd;
    s.sd2 += wd * d;
  } // @end-unroll
  return s;
}

// Weighted moments about m of the winsorized valid samples clamp(x, lo, hi): (sum w d, sum w d^2).
fn winsor_moments(lo: VF, hi: VF, m: VF) -> array<VF, 2> {
  var sd = VF(0.0);
  var sd2 = VF(0.0);
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let d = select(VF(0.0), clamp(x, lo, hi) - m, x == x);
    let wd = weight(f) * d;
    sd += wd;
    sd2 += wd * d;
  } // @end-unroll
  return array<VF, 2>(sd, sd2);
}

// Number of valid samples with key <= t, and the smallest valid key above t.
struct Rank {
  le: VU,
  next: VU,
}

fn rank(t: VU) -> Rank {
  var r = Rank(VU(0u), VU(0xffffffffu));
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let k = key(x);
    let ok = x == x;
    r.le += ones(ok & (k <= t));
    r.next = select(r.next, k, ok & (k > t) & (k < r.next));
  } // @end-unroll
  return r;
}

fn count_le(t: VU) -> VU {
  var c = VU(0u);
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    c += ones((x == x) & (key(x) <= t));
  } // @end-unroll
  return c;
}

// Counts this invocation's samples outside [lo, hi], packed low + (high << 16) per lane: in
// registers when resident (summed over lanes and flushed once by flush_tally), else straight
// into the workgroup tallies.
fn tally_rejections(lo: VF, hi: VF) {
  for (var f = 0u; f < N; f++) { // @unroll
    let x = sample(f);
    let packed = select(VU(0u), VU(1u), x < lo) + select(VU(0u), VU(0x10000u), x > hi);
    if (RESIDENT) {
      tally[f] += packed;
    } else {
      let p = hsum(packed);
      if (p != 0u) {
        atomicAdd(&wg_rej[f], p);
      }
    }
  } // @end-unroll
}

fn flush_tally() {
  for (var f = 0u; f < N; f++) { // @unroll
    let p = hsum(tally[f]);
    if (p != 0u) {
      atomicAdd(&wg_rej[f], p);
    }
  } // @end-unroll
}

struct Result {
  mean: VF,
  count: VU,
  lo: VF,
  hi: VF,
}

// One pass per iteration: the moments of the candidate set are taken about the current centre m
// (close to the new one, so the f32 variance E[d^2] - E[d]^2 does not cancel badly) and give
// both the new centre and the sigma for the next iteration.
fn stack_sigma(all: Sums, min_keep: VU) -> Result {
  var lo = -infv();
  var hi = infv();
  var n = all.n;
  var m = all.swv / all.sw;
  var s = sqrt(sq_dev_valid(m) / all.sw);
  for (var it = 0u; it < params.max_iters; it++) {
    let lo_c = maxv(lo, m - params.k_low * s);
    let hi_c = minv(hi, m + params.k_high * s);
    let c = moments_in(lo_c, hi_c, m);
    let take = (c.n >= min_keep) & (c.sw > VF(0.0));
    // A subset of equal size is the same set: nothing newly rejected, a fixed point.
    let changed = take & (c.n != n);
    let mu = c.sd / c.sw;
    lo = select(lo, lo_c, take);
    hi = select(hi, hi_c, take);
    n = select(n, c.n, take);
    m = select(m, m + mu, take);
    s = select(s, sqrt(max(c.sd2 / c.sw - mu * mu, VF(0.0))), take);
    if (!any(changed)) {
      break;
    }
  }
  return Result(m, n, lo, hi);
}

fn stack_winsor(all: Sums, min_keep: VU) -> Result {
  let valid_lo = -infv();
  let valid_hi = infv();
  var m = all.swv / all.sw;
  var s = sqrt(sq_dev_valid(m) / all.sw);
  // One pass per step: moments about the current centre give the new centre and sigma.
  for (var it = 0u; it < params.max_iters; it++) {
    let mo = winsor_moments(m - params.winsor_k * s, m + params.winsor_k * s, m);
    let mu = mo[0] / all.sw;
    s = params.winsor_c * sqrt(max(mo[1] / all.sw - mu * mu, VF(0.0)));
    m += mu;
  }
  let lo_c = m - params.k_low * s;
  let hi_c = m + params.k_high * s;
  let c = sums_in(lo_c, hi_c);
  let take = (c.n >= min_keep) & (c.sw > VF(0.0));
  let sw = select(all.sw, c.sw, take);
  let swv = select(all.swv, c.swv, take);
  return Result(swv / sw, select(all.n, c.n, take), select(valid_lo, lo_c, take), select(valid_hi, hi_c, take));
}

// count_le from the keys held in registers (resident mode): a NaN sample's key 0xffffffff is
// never <= a bisection midpoint while a lane has a valid sample (mid < 0xffffffff there, since
// count_le(0xfffffffe) = n > k_lo), so the counts equal count_le's; lanes without a valid sample
// give NaN either way.
fn count_le_keys(t: VU) -> VU {
  var c = VU(0u);
  for (var f = 0u; f < N; f++) { // @unroll
    c += ones(keys[f] <= t);
  } // @end-unroll
  return c;
}

fn stack_median(n: VU) -> VF {
  let k_lo = (n - VU(1u)) / VU(2u);
  let k_hi = n / VU(2u);
  if (RESIDENT) {
    // Keys once per pixel instead of once per sample and bisection step (32 steps): ~2x fewer
    // operations per step on llvmpipe.
    for (var f = 0u; f < N; f++) { // @unroll
      let x = v[f];
      keys[f] = select(VU(0xffffffffu), key(x), x == x);
    } // @end-unroll
  }
  // Smallest key t with count(key <= t) > k_lo is the key of the k_lo-th smallest sample.
  var lo = VU(0u);
  var hi = VU(0xffffffffu);
  for (var b = 0u; b < 32u; b++) {
    let mid = lo + ((hi - lo) >> VU(1u));
    var le: VU;
    if (RESIDENT) {
      le = count_le_keys(mid);
    } else {
      le = count_le(mid);
    }
    let big = le > k_lo;
    hi = select(hi, mid, big);
    lo = select(mid + VU(1u), lo, big);
  }
  let r = rank(lo);
  let a = unkey(lo);
  let b = unkey(select(r.next, lo, r.le > k_hi));
  return select(nanv(), (a + b) * 0.5, n > VU(0u));
}

// One band row: K pixels starting at column x0.
fn stack_row(row: u32, x0: u32, lane: VU) {
  let live = row < params.rows;
  inrow = (VU(x0) + lane < VU(params.width)) & VB(live);
  base0 = select(0u, row * params.width + x0, live);

  if (RESIDENT) {
    for (var f = 0u; f < N; f++) { // @unroll
      v[f] = load_norm(f);
    } // @end-unroll
  }

  let all = sums_valid();
  // ceil in f32 on purpose: the reference reproduces it exactly (Math.fround of the product).
  let min_keep = max(VU(1u), VU(ceil(VF(all.n) * params.min_fraction)));
  var res = Result(all.swv / all.sw, all.n, -infv(), infv());
  if (METHOD == 1u) {
    res = stack_sigma(all, min_keep);
  } else if (METHOD == 2u) {
    res = stack_winsor(all, min_keep);
  }
  // Accepted bounds always keep some weight, so the survivors weigh something iff the valid samples do.
  var mean = select(nanv(), res.mean, (res.count > VU(0u)) & (all.sw > VF(0.0)));
  if (METHOD == 3u) {
    mean = stack_median(all.n);
  }
  if (METHOD == 1u || METHOD == 2u) {
    tally_rejections(res.lo, res.hi);
  }
  store(base0, mean, res.count);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32) {
  var lane = VU(0u);
  for (var l = 0u; l < K; l++) {
    lane[l] = l;
  }
  let x0 = gid.x * K;
  let first = params.row0 + gid.y * RPI;
  // Unrolled when resident: llvmpipe runs a runtime loop around this body ~1.7x slower.
  for (var r = 0u; r < RPI; r++) { // @unroll
    stack_row(first + r, x0, lane);
  } // @end-unroll

  if (METHOD == 1u || METHOD == 2u) {
    if (RESIDENT) {
      flush_tally();
    }
    workgroupBarrier();
    for (var f = lid; f < N; f += WG) {
      let packed = atomicLoad(&wg_rej[f]);
      if ((packed & 0xffffu) != 0u) {
        atomicAdd(&rejected[f], packed & 0xffffu);
      }
      if ((packed >> 16u) != 0u) {
        atomicAdd(&rejected[N + f], packed >> 16u);
      }
    }
  }
}
