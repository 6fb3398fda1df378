// stacking/premask_apply: last step of STACKING's outlier pre-mask on the device: per pixel of
// the band's owned rows, the keep rule over all frames, then the owned rows of every frame written
// compacted (frames × owned rows × width) with masked samples as NaN, ready for the stack kernel;
// per-frame tallies of masked samples added. Contract and TypeScript reference: premaskApply and
// compactOwned in src/cpu/premask.ts.
// Bindings: 0 uniform Params (premask_flag's block); 1 read-only band (f32, frame-major over the
//           band's `rows` work rows); 2 read-only mask (words of premask_flag);
//           3 read_write out, the compacted band as u32 bits (f32 for the stack kernel);
//           4 read_write tallies, atomic u32: [0, N) masked low, [N, 2N) masked high per frame.
// A sample is masked when it carries data (is not NaN) and its own code is non-zero (1, 5 high; 2, 6 low) or,
// with no code of its own, the first of rows r−2 … r+2 holding grow bits gives it their type.
// Keep rule: with nv valid and nm masked samples, the masked ones go only if nm > 0 and
// nv − nm >= max(1, ceil(f32(min_fraction) · nv)) (the stack kernel's min_keep).
// Two passes over the frames: the first writes each sample, or a marker NaN for a masked one, and
// counts; the second turns markers into NaN (tallied) or back into the sample.
// Workgroup: WG x 1 x 1, one pixel per invocation; grid x = ⌈width / WG⌉, y = owned rows.

struct Params {
  width: u32,
  rows: u32,
  frames: u32,
  words: u32,
  level: f32,
  alpha: f32,
  owned_y0: u32,
  owned_rows: u32,
  min_fraction: f32,
  pad0: u32,
  pad1: u32,
  pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> band: array<f32>;
@group(0) @binding(2) var<storage, read> mask: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<storage, read_write> tallies: array<atomic<u32>>;

override WG: u32 = 64;

const NAN_BITS: u32 = 0x7fc00000u;
// Markers for masked samples between the passes: NaN bit patterns no input sample keeps (every
// NaN input is written as NAN_BITS in the first pass).
const MARK_HIGH: u32 = 0x7fa51301u;
const MARK_LOW: u32 = 0x7fa51302u;

fn byte_at(f: u32, r: u32, x: u32) -> u32 {
  return (mask[(f * params.rows + r) * params.words + (x >> 2u)] >> (8u * (x & 3u))) & 0xffu;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let x = gid.x;
  let ro = gid.y;
  let W = params.width;
  if (x >= W || ro >= params.owned_rows) {
    return;
  }
  let r = params.owned_y0 + ro;
  let N = params.frames;
  var nv = 0u;
  var nm = 0u;
  for (var f = 0u; f < N; f++) {
    let bits = bitcast<u32>(band[(f * params.rows + r) * W + x]);
    let o = (f * params.owned_rows + ro) * W + x;
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
      out[o] = NAN_BITS;
      continue;
    }
    nv++;
    let own = byte_at(f, r, x) & 7u;
    // 1 high, 2 low, 0 none.
    var kind = select(select(0u, 2u, own == 2u || own == 6u), 1u, own == 1u || own == 5u);
    if (own == 0u) {
      for (var dy = -2; dy <= 2; dy++) {
        let rr = i32(r) + dy;
        if (rr < 0 || rr >= i32(params.rows)) {
          continue;
        }
        let h = (byte_at(f, u32(rr), x) >> 3u) & 3u;
        if (h != 0u) {
          kind = h;
          break;
        }
      }
    }
    if (kind != 0u) {
      nm++;
      out[o] = select(MARK_LOW, MARK_HIGH, kind == 1u);
    } else {
      out[o] = bits;
    }
  }
  if (nm == 0u) {
    return;
  }
  let min_keep = max(1u, u32(ceil(f32(nv) * params.min_fraction)));
  let apply = nv - nm >= min_keep;
  for (var f = 0u; f < N; f++) {
    let o = (f * params.owned_rows + ro) * W + x;
    let c = out[o];
    if (c != MARK_HIGH && c != MARK_LOW) {
      continue;
    }
    if (apply) {
      out[o] = NAN_BITS;
      atomicAdd(&tallies[select(f, N + f, c == MARK_HIGH)], 1u);
    } else {
      out[o] = bitcast<u32>(band[(f * params.rows + r) * W + x]);
    }
  }
}
