// stacking/premask_flag: first step of STACKING's outlier pre-mask on the device: marks the
// samples of a band that deviate from the per-pixel median (seeds; strong seeds grow), and for
// every cell the type of the leftmost strong seed within ±2 columns of its row, which
// premask_apply turns into the raster-first strong seed of the cell's 5×5 window. Contract and
// TypeScript reference: premaskFlag in src/cpu/premask.ts (f32 arithmetic
// step by step, so both flag the same samples); wrapper src/gpu/kernels/premask.ts.
// Bindings: 0 uniform Params; 1 read-only band, f32 frame-major (frame f, band row r, column x at
//           (f * rows + r) * width + x); 2 read-only median, f32 rows × width; 3 read-only
//           per-frame vec4f (scale, offset, hi = k_high·σ_f, lo = k_low·σ_f; hi = lo = +inf
//           skips a frame); 4 read_write mask, u32 words holding 4 byte codes: frame f, row r,
//           word w at (f * rows + r) * words + w, byte k = column 4w + k.
// Byte: bits 0..2 own code (0 none, 1 seed high, 2 seed low, 5 strong high, 6 strong low);
//       bits 3..4 the leftmost strong seed among columns x−2 … x+2 of the row (0, 1 high, 2 low).
//           5 read-only sky, f32 rows × width (NOISE = 1 only; NOISE = 0: any buffer, unread).
// Rule (NOISE = 0, the samples'-spread bounds): d = fma(v, scale, offset) − m,
//       t = alpha·|m − level|; high if d > hi + t (strong if d > 2·(hi + t)), low if
//       −d > lo + t (strong if −d > 2·(lo + t)); NaN v or m: 0.
// Rule (NOISE = 1, rejection.bounds noise_model: the stack's noise-model bound around the
//       median, src/cpu/reject-noise.ts): the frame table holds two vec4f per frame, [2f] =
//       (scale, offset, sigma², 0; sigma² < 0 skips the frame), [2f + 1] = (K, alpha², 0, 0);
//       with S = max(m − B, 0) (B = sky, NaN → S = 0) and tau = sqrt(sigma² + K·S + alpha²·S²),
//       th = k_high·tau and tl = k_low·tau (Params), high if d > th (strong if d > 2·th), low
//       if −d > tl (strong if −d > 2·tl). The reference (premaskFlagNoise) computes tau in f64,
//       so the two may disagree for a sample within rounding distance of a bound.
// Workgroup: WG x 1 x 1, one word (4 columns) per invocation and all frames; the invocation
//            classifies columns 4w − 2 … 4w + 5 itself (2 beyond the word each side), so no
//            second pass and no atomics are needed (both cost seconds per band on llvmpipe);
//            grid x = ⌈words / WG⌉, y = rows.

struct Params {
  width: u32,
  rows: u32,
  frames: u32,
  words: u32,      // mask words per row: ⌈width / 4⌉
  level: f32,      // the reference's level L
  alpha: f32,      // star-profile tolerance (fraction of |m − L|)
  owned_y0: u32,   // unused here (same block as premask_apply)
  owned_rows: u32, // unused here
  min_fraction: f32,
  k_high: f32,     // NOISE = 1: the bound's κ above and below the median
  k_low: f32,
  pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> band: array<f32>;
@group(0) @binding(2) var<storage, read> median: array<f32>;
@group(0) @binding(3) var<storage, read> frame: array<vec4f>;
@group(0) @binding(4) var<storage, read_write> mask: array<u32>;
@group(0) @binding(5) var<storage, read> sky: array<f32>;

override WG: u32 = 64;
// 0: samples'-spread bounds (frame = scale, offset, hi, lo); 1: noise-model bounds (see head).
override NOISE: u32 = 0u;

fn not_nan(v: f32) -> bool {
  // Bit test: NaN comparisons may be folded away by the driver's compiler. Infinities count as
  // data (they compare like the reference's values do).
  return (bitcast<u32>(v) & 0x7fffffffu) <= 0x7f800000u;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let w = gid.x;
  let r = gid.y;
  if (w >= params.words || r >= params.rows) {
    return;
  }
  let W = i32(params.width);
  let x0 = i32(w * 4u) - 2;
  // Columns x0 … x0 + 7: median, tolerance, and whether the column exists with a median.
  // NOISE = 0: t is the star tolerance alpha·|m − L|; NOISE = 1: t is the signal S above the sky.
  var m: array<f32, 8>;
  var t: array<f32, 8>;
  var ok: array<bool, 8>;
  for (var j = 0; j < 8; j++) {
    let x = x0 + j;
    ok[j] = false;
    if (x >= 0 && x < W) {
      let mk = median[r * params.width + u32(x)];
      m[j] = mk;
      if (NOISE == 1u) {
        let b = sky[r * params.width + u32(x)];
        t[j] = select(0.0, max(mk - b, 0.0), not_nan(b));
      } else {
        t[j] = params.alpha * abs(mk - params.level);
      }
      ok[j] = not_nan(mk);
    }
  }
  for (var f = 0u; f < params.frames; f++) {
    var p: vec4f;
    var q = vec4f(0.0);
    if (NOISE == 1u) {
      p = frame[2u * f];
      q = frame[2u * f + 1u];
    } else {
      p = frame[f];
    }
    let base = (f * params.rows + r) * params.width;
    var code: array<u32, 8>;
    for (var j = 0; j < 8; j++) {
      code[j] = 0u;
      if (ok[j] && !(NOISE == 1u && p.z < 0.0)) {
        let v = band[base + u32(x0 + j)];
        if (not_nan(v)) {
          let d = fma(v, p.x, p.y) - m[j];
          var th: f32;
          var tl: f32;
          if (NOISE == 1u) {
            let S = t[j];
            let tau = sqrt(p.z + q.x * S + q.y * S * S);
            th = params.k_high * tau;
            tl = params.k_low * tau;
          } else {
            th = p.z + t[j];
            tl = p.w + t[j];
          }
          if (d > th) {
            code[j] = select(1u, 5u, d > 2.0 * th);
          } else if (-d > tl) {
            code[j] = select(2u, 6u, -d > 2.0 * tl);
          }
        }
      }
    }
    var word = 0u;
    for (var k = 0; k < 4; k++) {
      if (x0 + 2 + k >= W) {
        break;
      }
      var h = 0u;
      for (var j = k; j <= k + 4; j++) {
        if (code[j] == 5u || code[j] == 6u) {
          h = select(2u, 1u, code[j] == 5u);
          break;
        }
      }
      word = word | ((code[k + 2] | (h << 3u)) << (8u * u32(k)));
    }
    mask[(f * params.rows + r) * params.words + w] = word;
  }
}
