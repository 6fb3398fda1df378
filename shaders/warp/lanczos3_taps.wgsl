// warp/lanczos3_taps: the Lanczos-3 tap weights both Lanczos warps use (lanczos3.wgsl, the
// separable passes through lanczos3_separable_common.wgsl), spliced with `//!include`
// (src/gpu/shaders.ts): normalised weights of the six taps around a fraction t, 2 trig calls
// (sin π(t−k) = (−1)^k sin πt and sin(π(t−k)/3) = sin a·cos(kπ/3) − cos a·sin(kπ/3); the common
// factor sin(πt)/t cancels in the normalisation), a fraction below SNAP (2^-20) snapping to the
// exact delta, and the renormalisation without taps outside the image. Contract: src/cpu/warp.ts.
// No entry point, no bindings.

const PI_3: f32 = 1.0471975511965979;
const SQRT3_2: f32 = 0.8660254037844386;
const SNAP: f32 = 9.5367431640625e-7; // 2^-20
// Normalised weights of taps k = −2, −1, 0 (lo) and 1, 2, 3 (hi).
struct Taps {
  lo: vec3f,
  hi: vec3f,
}

fn lanczos3(t: f32) -> Taps {
  let a = t * PI_3;
  let s = sin(a);
  let c = cos(a);
  // n_k = (−1)^k sin(π(t−k)/3), which repeats with period 3: (B, C, A) for k = −2, −1, 0 and 1, 2, 3.
  let n = vec3f(SQRT3_2 * c - 0.5 * s, -(0.5 * s + SQRT3_2 * c), s) * t;
  let dl = vec3f(t + 2.0, t + 1.0, t);
  let dh = vec3f(t - 1.0, t - 2.0, t - 3.0);
  let lo = n / (dl * dl);
  let hi = n / (dh * dh);
  let inv = 1.0 / (lo.x + lo.y + lo.z + hi.x + hi.y + hi.z);
  let snap = t < SNAP;
  return Taps(select(lo * inv, vec3f(0.0, 0.0, 1.0), snap), select(hi * inv, vec3f(0.0), snap));
}

// Zeroes the weights of taps outside [0, n) (taps first .. first+5) and rescales the rest to sum 1.
fn edge(w: Taps, first: i32, n: i32) -> Taps {
  let klo = vec3i(first, first + 1, first + 2);
  let khi = klo + vec3i(3);
  let oklo = (klo >= vec3i(0)) & (klo < vec3i(n));
  let okhi = (khi >= vec3i(0)) & (khi < vec3i(n));
  let lo = select(vec3f(0.0), w.lo, oklo);
  let hi = select(vec3f(0.0), w.hi, okhi);
  let inv = select(1.0 / (lo.x + lo.y + lo.z + hi.x + hi.y + hi.z), 1.0, all(oklo) && all(okhi));
  return Taps(lo * inv, hi * inv);
}
