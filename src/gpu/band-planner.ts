// Band planner: splits an image into bands of rows so that every frame's slice of a band,
// the band's outputs and scratch fit both the memory budget and the adapter's binding and
// buffer limits. Neighbourhood kernels get halo rows above and below each band.
// Bands are sized to a working set (targetBytes), not to fill the budget: a stack of many
// frames then holds about what a stack of few holds, in more, thinner bands; the budget stays
// the upper bound.
// Invariants: bands tile [0, height) without gaps or overlap in their *owned* rows; read
// ranges (owned rows plus halos) stay inside the image; an impossible budget is refused with
// a message that says how much memory the smallest band would need.

import { GpuError } from './errors.js';

export interface BandPlanInput {
  width: number;
  height: number;
  /** Frames whose band slices are resident together (1 for single-image kernels). */
  frames: number;
  /** Bytes per pixel of one frame's input (4 for f32 mono, 12 for f32 RGB planes). */
  bytesPerPixel: number;
  /** Bytes per owned pixel of outputs and per-pixel scratch (e.g. mean + count = 8). */
  outputBytesPerPixel: number;
  /** Rows of context needed above and below each band (e.g. 3 for Lanczos-3, 1 for bilinear debayer). */
  haloRows: number;
  /** Memory budget for one band's buffers, bytes. */
  budgetBytes: number;
  /** Largest single storage binding (maxStorageBufferBindingSize); all frames of a band share one binding. */
  maxBindingBytes: number;
  /** Bytes per pixel of one frame that go into the largest binding (default bytesPerPixel: all of them). */
  bindingBytesPerPixel?: number;
  /** Smallest band accepted when the binding is the limit (default minRows): thinner bands on the device can beat a host fallback. */
  bindingMinRows?: number;
  /**
   * Working set aimed at: bytes of the frames' band slices (inputs × inFlight, halos included).
   * Bands are as tall as this allows but at least minRows; the budget stays the bound. Default: the budget.
   */
  targetBytes?: number;
  /**
   * Smallest band when targetBytes is the limit (default minRows): a caller whose per-band cost
   * is small may let the working set, not the floor, bound the bands of many frames.
   */
  targetMinRows?: number;
  /** Copies of the band input held at once (2 when uploads of band k+1 overlap work on band k). Default 1. */
  inFlight?: number;
  /** Smallest useful band (bands below ~32 rows waste dispatch overhead). Default 32. */
  minRows?: number;
  /** Band heights are multiples of this (2 keeps Bayer phase aligned). Default 1. */
  rowAlign?: number;
}

export interface Band {
  /** First owned row and owned row count: the rows this band produces. */
  y0: number;
  rows: number;
  /** Rows actually read: owned rows plus available halo. */
  readY0: number;
  readRows: number;
}

export interface BandPlan {
  rowsPerBand: number;
  bands: Band[];
  /** Bytes one band needs (inputs × inFlight + outputs). */
  bytesPerBand: number;
  limitedBy: 'height' | 'budget' | 'binding' | 'working-set';
}

const MiB = 1024 * 1024;
const mib = (b: number) => `${(b / MiB).toFixed(1)} MiB`;

export function planBands(input: BandPlanInput): BandPlan {
  const { width, height, frames, bytesPerPixel, outputBytesPerPixel, haloRows, budgetBytes, maxBindingBytes } = input;
  const inFlight = input.inFlight ?? 1;
  const align = Math.max(1, input.rowAlign ?? 1);
  for (const [name, v] of Object.entries({ width, height, frames, bytesPerPixel })) {
    if (!Number.isInteger(v) || v < 1) throw new GpuError('BAD_ARGUMENT', `band planner: ${name} = ${v} must be a positive integer`);
  }
  if (haloRows < 0 || outputBytesPerPixel < 0) throw new GpuError('BAD_ARGUMENT', 'band planner: halo rows and output bytes must not be negative');
  const inputBytesPerRow = frames * width * bytesPerPixel;
  const outputBytesPerRow = width * outputBytesPerPixel;
  const bytesFor = (rows: number) => (Math.min(height, rows + 2 * haloRows) * inputBytesPerRow) * inFlight + rows * outputBytesPerRow;

  const byBudget = Math.floor((budgetBytes - 2 * haloRows * inputBytesPerRow * inFlight) / (inputBytesPerRow * inFlight + outputBytesPerRow));
  const bindingBytesPerRow = frames * width * (input.bindingBytesPerPixel ?? bytesPerPixel);
  const byBinding = Math.floor(maxBindingBytes / bindingBytesPerRow) - 2 * haloRows;
  const minRows = Math.min(height, Math.max(align, input.minRows ?? 32));
  const bindingMinRows = Math.min(minRows, Math.max(align, input.bindingMinRows ?? minRows));
  const targetMinRows = Math.min(minRows, Math.max(align, input.targetMinRows ?? minRows));
  const byTarget = input.targetBytes === undefined ? Number.MAX_SAFE_INTEGER : Math.max(targetMinRows, Math.floor(input.targetBytes / (inputBytesPerRow * inFlight)) - 2 * haloRows);
  let rows = Math.min(height, byBudget, byBinding, byTarget);
  const limitedBy: BandPlan['limitedBy'] =
    rows === height ? 'height' : rows === byBudget && byBudget <= byBinding ? 'budget' : rows === byBinding ? 'binding' : 'working-set';
  if (rows < height) rows -= rows % align;
  if (rows < (limitedBy === 'binding' ? bindingMinRows : limitedBy === 'working-set' ? targetMinRows : minRows)) {
    const need = bytesFor(minRows);
    if (byBinding < bindingMinRows) {
      throw new GpuError(
        'BINDING_TOO_LARGE',
        `${frames} frames x ${width} px x ${input.bindingBytesPerPixel ?? bytesPerPixel} B need ${mib((bindingMinRows + 2 * haloRows) * bindingBytesPerRow)} for a ${bindingMinRows}-row band, over the adapter's ${mib(maxBindingBytes)} storage-binding limit; stack fewer frames at once`,
      );
    }
    throw new GpuError(
      'BUDGET_TOO_SMALL',
      `memory budget ${mib(budgetBytes)} cannot hold a ${minRows}-row band of ${frames} frames x ${width} px (needs ${mib(need)}); raise runtime_limits.memory_budget to at least ${Math.ceil(need / MiB)} MiB`,
    );
  }
  const bands: Band[] = [];
  for (let y0 = 0; y0 < height; y0 += rows) {
    const owned = Math.min(rows, height - y0);
    const readY0 = Math.max(0, y0 - haloRows);
    const readEnd = Math.min(height, y0 + owned + haloRows);
    bands.push({ y0, rows: owned, readY0, readRows: readEnd - readY0 });
  }
  return { rowsPerBand: rows, bands, bytesPerBand: bytesFor(rows), limitedBy };
}
