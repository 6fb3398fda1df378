// The seed's image outputs of a run-queue run, made from the per-filter stacks
// (outputs/stacked_<filter>.fits, all in the common reference's geometry):
//   stacked_linear.fits  a copy of the L stack, or of the only stack when the run has a single
//                        mono filter; absent otherwise (e.g. R, G, B without L);
//   stacked_rgb.fits     OSC: a copy of the OSC stack; mono: planes R, G, B (the 3-plane cube the
//                        OSC path writes) composed from the R, G and B stacks when all three exist.
// Copies go through a temporary name and a rename (atomic like writeFits). The RGB header is
// the G stack's (reference cards, provenance) without FILTER, with NCOMBINE the sum over the
// three channels, NCOMB_R/G/B and EXPT_R/G/B per channel, and a HISTORY line naming the sources.
// Each channel keeps its own photometric scale (its group reference's): colour balance is PCC's.

import { copyFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { readFitsImage, writeFits } from '../../fits/index.js';
import { outputPath } from '../../shared/run-layout.js';
import { addArtifact } from '../artifacts.js';
import type { RawStackState } from './state.js';

export interface FilterStack {
  filter: string;
  /** Absolute path and path relative to the run folder. */
  path: string;
  rel: string;
  frames: number;
}

export interface QueueOutputs {
  outputs: { stacked_linear?: string; stacked_rgb?: string };
  /** How stacked_rgb.fits came about (null when there is none). */
  rgb: { from: Record<string, string> | string; method: 'composed' | 'osc' } | null;
  notes: { code: string; message: string }[];
}

async function copyAtomic(from: string, to: string): Promise<void> {
  const tmp = `${to}.tmp-${process.pid}`;
  try {
    await copyFile(from, tmp);
    await rename(tmp, to);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

export async function composeQueueOutputs(state: RawStackState, stacks: readonly FilterStack[], osc: boolean): Promise<QueueOutputs> {
  const out: QueueOutputs = { outputs: {}, rgb: null, notes: [] };
  const by = new Map(stacks.map((s) => [s.filter, s]));
  const dir = state.folder.outputsDir;

  const linear = by.get('L') ?? (!osc && stacks.length === 1 ? stacks[0] : undefined);
  if (linear) {
    const path = join(dir, 'stacked_linear.fits');
    await copyAtomic(linear.path, path);
    state.outputs.stacked_linear = path;
    out.outputs.stacked_linear = outputPath(state.folder.layout, 'stacked_linear.fits');
    addArtifact(state, 'stacked_linear', 'STACKING', out.outputs.stacked_linear);
  } else if (!osc) {
    out.notes.push({ code: 'no_linear_stack', message: `no L filter and ${stacks.length} filters (${stacks.map((s) => s.filter).join(', ')}): no stacked_linear.fits` });
  }

  const rgbPath = join(dir, 'stacked_rgb.fits');
  const oscStack = by.get('OSC');
  if (osc && oscStack) {
    await copyAtomic(oscStack.path, rgbPath);
    out.rgb = { from: oscStack.rel, method: 'osc' };
  } else {
    const [r, g, b] = [by.get('R'), by.get('G'), by.get('B')];
    if (r && g && b) {
      const planes = [await readFitsImage(r.path), await readFitsImage(g.path), await readFitsImage(b.path)];
      const { width, height } = planes[1]!;
      const bad = planes.find((p) => p.width !== width || p.height !== height || p.planes !== 1);
      if (bad) {
        out.notes.push({ code: 'rgb_not_composed', message: `${bad.file} is ${bad.width}x${bad.height}x${bad.planes}, the G stack ${width}x${height}x1: no stacked_rgb.fits` });
        return out;
      }
      const n = width * height;
      const data = new Float32Array(3 * n);
      planes.forEach((p, c) => data.set(p.data.subarray(0, n), c * n));
      const header = planes[1]!.header.clone();
      header.delete('FILTER');
      const channels = [r, g, b];
      header.set('NCOMBINE', channels.reduce((a, s) => a + s.frames, 0), { comment: 'stacked frames, all three channels' });
      ['R', 'G', 'B'].forEach((name, c) => {
        header.set(`NCOMB_${name}`, channels[c]!.frames, { comment: `stacked frames of the ${name} channel` });
        const e = planes[c]!.header.getNumber('EXPTIME');
        if (e !== undefined) header.set(`EXPT_${name}`, e, { real: true, comment: `[s] total exposure of the ${name} channel` });
      });
      header.addHistory(`RGB composed from ${r.rel}, ${g.rel}, ${b.rel} (planes R, G, B)`);
      planes.length = 0;
      await writeFits(rgbPath, { width, height, planes: 3, data }, { header });
      out.rgb = { from: { R: r.rel, G: g.rel, B: b.rel }, method: 'composed' };
    } else if (r || g || b) {
      const missing = ['R', 'G', 'B'].filter((f) => !by.has(f));
      out.notes.push({ code: 'rgb_not_composed', message: `no ${missing.join(', ')} stack: no stacked_rgb.fits` });
    }
  }
  if (out.rgb) {
    state.outputs.stacked_rgb = rgbPath;
    out.outputs.stacked_rgb = outputPath(state.folder.layout, 'stacked_rgb.fits');
    addArtifact(state, 'stacked_rgb', 'STACKING', out.outputs.stacked_rgb);
  }
  return out;
}
