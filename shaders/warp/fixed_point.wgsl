// warp/fixed_point: 64-bit fixed-point arithmetic of the warp kernels' source positions
// (bilinear.wgsl, lanczos3.wgsl, lanczos3_separable_common.wgsl splice it with `//!include`;
// src/gpu/shaders.ts). value = hi·2^32 + lo in units of 2^-32 px; integer arithmetic keeps a
// position bit-identical on every device and in the TypeScript reference (src/cpu/warp.ts).
// No entry point, no bindings.
struct Fix {
  hi: i32,
  lo: u32,
}

fn fix(words: vec2u) -> Fix {
  return Fix(bitcast<i32>(words.x), words.y);
}

fn fix_add(a: Fix, b: Fix) -> Fix {
  let lo = a.lo + b.lo;
  return Fix(a.hi + b.hi + select(0, 1, lo < a.lo), lo);
}

// c·v for 0 <= v < 2^16 (|c| < 4, so the high word cannot overflow).
fn fix_mul(c: Fix, v: u32) -> Fix {
  let p1 = (c.lo & 0xffffu) * v;
  let p2 = (c.lo >> 16u) * v;
  let lo = p1 + (p2 << 16u);
  return Fix(c.hi * i32(v) + i32((p2 >> 16u) + select(0u, 1u, lo < p1)), lo);
}
