// stats/histogram: one level of an exact radix selection. Every finite sample is turned into
// an order-preserving u32 key (of the value, or of the deviation |x - center[group]|); a
// sample whose key matches a selection slot's prefix (key & mask == prefix) is counted in
// that slot's histogram at bin (key >> shift) & bin_mask. The host reads the histograms,
// finds the bin holding the wanted rank, extends the prefix and runs the next level, until
// all 32 key bits are known: the k-th smallest value is then exact.
// Slots: two per group (the lower and upper middle ranks of the median; the second is
// disabled with mask 0 / prefix 1 while both ranks share a prefix). Groups: one for the whole
// image, or the four 2x2 Bayer phases (group = (y&1)*2 + (x&1) in frame coordinates).
// Bindings: 0 uniform Params (slots and centers included); 1 read-only array<vec4f> samples
//           (row-major, `width` per row; the binding covers ceil(count / 4) vec4, lanes past
//           `count` are ignored); 2 read_write array<atomic<u32>> histograms
//           [slot * stride + bin], accumulated with atomicAdd (the host clears it first);
//           stride = SLOT_BINS, or `direct` for a level counted straight into global memory.
// Workgroup: WG x 1 x 1; the band's ceil(count / 4) vec4 are split into equal contiguous runs, one
//            per workgroup; invocation i reads vec4 i, i + WG, ... of its run (wide loads:
//            llvmpipe loads per lane), tracking (x, y) incrementally for the Bayer group.
//            Counts go to a workgroup copy of all slots' histograms (SLOTS * SLOT_BINS u32,
//            zeroed by WGSL's workgroup initialisation), merged into the global one (non-zero
//            bins only) at the end. Consecutive increments of one invocation to the same bin
//            are combined into one atomicAdd (per-sample workgroup atomics dominate the cost
//            on llvmpipe; flat or integer-valued data often repeats a bin).
//            The first level of a selection uses that workgroup histogram (every sample is
//            counted, in at most SLOT_BINS bins); later levels count only the samples inside the
//            chosen bin, so they add straight to a large global histogram (`direct` bins per
//            slot, up to 2^20) and the selection needs two levels instead of three.
//            Dispatch: (groups, 1, 1).
// Precision: counts exact (u32). Deviation keys use the f32 difference x - center, rounded
//            once (the same rule as the TypeScript reference).
// No-data: NaN and +-Inf (exponent bits all set; tested on the bits) are skipped.
// Key: negative x -> ~bits, else bits | 0x80000000 (deviations are >= 0: bits | 0x80000000).

struct Params {
  width: u32,
  count: u32,      // samples in this band (rows * width)
  per_wg: u32,     // vec4 per workgroup
  bayer: u32,      // 1: four Bayer-phase groups; 0: one group
  phase_x: u32,    // Bayer column parity of column 0 of this band
  phase_y: u32,    // Bayer row parity of row 0 of this band
  deviation: u32,  // 1: keys of |x - center[group]|; 0: keys of x
  direct: u32,     // 0: count in workgroup memory; else bins per slot of the global histogram,
                   // counted there directly (later levels, where few samples match)
  center: vec4f,   // per-group center for deviation keys
  slots: array<vec4u, 8>,  // per slot (prefix, mask, shift, bin_mask); slot = group * 2 + j
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> samples4: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> hist: array<atomic<u32>>;

override WG: u32 = 256;
override SLOTS: u32 = 2;
override SLOT_BINS: u32 = 2048;

var<workgroup> w_hist: array<atomic<u32>, SLOTS * SLOT_BINS>;

// Run-length combining of this invocation's increments.
var<private> pend_idx: u32 = 0xffffffffu;
var<private> pend_cnt: u32 = 0u;

fn bump(idx: u32) {
  if (idx == pend_idx) {
    pend_cnt += 1u;
  } else {
    if (pend_cnt != 0u) {
      atomicAdd(&w_hist[pend_idx], pend_cnt);
    }
    pend_idx = idx;
    pend_cnt = 1u;
  }
}

// Counts the samples selected by m at histogram indices idx, in order.
fn bump4(m: vec4<bool>, idx: vec4u) {
  if (params.direct != 0u) {
    if (m.x) { atomicAdd(&hist[idx.x], 1u); }
    if (m.y) { atomicAdd(&hist[idx.y], 1u); }
    if (m.z) { atomicAdd(&hist[idx.z], 1u); }
    if (m.w) { atomicAdd(&hist[idx.w], 1u); }
    return;
  }
  if (any(m)) {
    if (m.x) { bump(idx.x); }
    if (m.y) { bump(idx.y); }
    if (m.z) { bump(idx.z); }
    if (m.w) { bump(idx.w); }
  }
}

// Finite samples among the 4 at vec4 index j (lanes past the band's end count as missing).
fn valid(j: u32, v: vec4f) -> vec4<bool> {
  return ((bitcast<vec4u>(v) & vec4u(0x7f800000u)) != vec4u(0x7f800000u)) & (vec4u(j * 4u) + vec4u(0u, 1u, 2u, 3u) < vec4u(params.count));
}

fn order_key(bits: vec4u) -> vec4u {
  return select(bits | vec4u(0x80000000u), ~bits, (bits & vec4u(0x80000000u)) != vec4u(0u));
}

fn keys_of(v: vec4f, c: vec4f) -> vec4u {
  if (params.deviation == 1u) {
    return bitcast<vec4u>(abs(v - c)) | vec4u(0x80000000u);
  }
  return order_key(bitcast<vec4u>(v));
}

fn groups_of(x: u32, y: u32) -> vec4u {
  let xs = vec4u(x) + vec4u(0u, 1u, 2u, 3u);
  let wrap = xs >= vec4u(params.width);
  let cx = select(xs, xs - vec4u(params.width), wrap);
  let cy = vec4u(y) + select(vec4u(0u), vec4u(1u), wrap);
  return ((cy + vec4u(params.phase_y)) & vec4u(1u)) * 2u + ((cx + vec4u(params.phase_x)) & vec4u(1u));
}

// Slot field f (0 prefix, 1 mask, 2 shift, 3 bin_mask) of slots s, per component.
fn field(s: vec4u, f: u32) -> vec4u {
  return vec4u(params.slots[s.x][f], params.slots[s.y][f], params.slots[s.z][f], params.slots[s.w][f]);
}

// Histogram indices and masks for keys of groups g (first matching slot of each group).
fn count_groups(key: vec4u, ok: vec4<bool>, g: vec4u) {
  let sa = g * 2u;
  let sb = sa + 1u;
  let ma = ok & ((key & field(sa, 1u)) == field(sa, 0u));
  let mb = ok & !ma & ((key & field(sb, 1u)) == field(sb, 0u));
  let stride = select(SLOT_BINS, params.direct, params.direct != 0u);
  let ia = sa * stride + ((key >> field(sa, 2u)) & field(sa, 3u));
  let ib = sb * stride + ((key >> field(sb, 2u)) & field(sb, 3u));
  bump4(ma | mb, select(ia, ib, mb));
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lid = lid3.x;
  let n4 = (params.count + 3u) / 4u;
  let j0 = wid.x * params.per_wg;
  let j1 = min(j0 + params.per_wg, n4);
  if (params.bayer == 1u) {
    let first = (j0 + lid) * 4u;
    var y = first / params.width;
    var x = first % params.width;
    let step = 4u * WG;
    let dy = step / params.width;
    let dx = step % params.width;
    for (var j = j0 + lid; j < j1; j += WG) {
      let v = samples4[j];
      let g = groups_of(x, y);
      let c = vec4f(params.center[g.x], params.center[g.y], params.center[g.z], params.center[g.w]);
      count_groups(keys_of(v, c), valid(j, v), g);
      x += dx;
      y += dy;
      if (x >= params.width) {
        x -= params.width;
        y += 1u;
      }
    }
  } else {
    // One group: slot records are loop invariants.
    let a = params.slots[0];
    let b = params.slots[1];
    let c = vec4f(params.center[0]);
    let stride = select(SLOT_BINS, params.direct, params.direct != 0u);
    for (var j = j0 + lid; j < j1; j += WG) {
      let v = samples4[j];
      let key = keys_of(v, c);
      let ok = valid(j, v);
      let ma = ok & ((key & vec4u(a.y)) == vec4u(a.x));
      let mb = ok & !ma & ((key & vec4u(b.y)) == vec4u(b.x));
      let ia = (key >> vec4u(a.z)) & vec4u(a.w);
      let ib = vec4u(stride) + ((key >> vec4u(b.z)) & vec4u(b.w));
      bump4(ma | mb, select(ia, ib, mb));
    }
  }
  if (params.direct != 0u) {
    return;
  }
  if (pend_cnt != 0u) {
    atomicAdd(&w_hist[pend_idx], pend_cnt);
  }
  workgroupBarrier();
  for (var i = lid; i < SLOTS * SLOT_BINS; i += WG) {
    let c = atomicLoad(&w_hist[i]);
    if (c != 0u) {
      atomicAdd(&hist[i], c);
    }
  }
}
