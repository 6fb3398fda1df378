// Image export (`skystack export`, the viewer's download): a FITS image → a stretched 8- or 16-bit
// PNG, TIFF or JPEG, encoded by sharp (libvips: libpng, libtiff with deflate, mozjpeg).
// - Orientation: rows are written top-down as pictures are; FITS rows are bottom-up unless
//   ROWORDER = 'TOP-DOWN' (displayFlipped), so the picture looks as the viewer shows it.
// - Channels: `rgb` (planes 0..2, the default for images of three or more planes), or one plane
//   (`r`/`g`/`b` = 0/1/2, or a plane number) written as greyscale.
// - Stretch: src/shared/stretch-math.ts (auto, linear, asinh from the channel statistics; hms =
//   as is for an HMS output, else the run's HMS look, hms-look.ts), or levels given explicitly
//   (the viewer sends what it shows). Sample value v → round(full · displayValue(v)), full =
//   255 or 65535.
// - JPEG holds 8 bits; asking it for 16 is an error, not a silent downgrade.
// Errors are ExportError with a closed code.

import { rename, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { FitsReader } from '../fits/index.js';
import { rowOrder } from '../fits/keys.js';
import { displayFlipped } from '../shared/pyramid-math.js';
import { defaultLevels, displayValue, levelsProblem, type ChannelLevels, type StretchMode } from '../shared/stretch-math.js';
import { applyRecipe, hmsSettings, recipeSample, solveRecipe, type HmsRecipe, type HmsSettings } from './hms-look.js';
import { ChannelAccumulator } from './stats.js';

export type ExportFormat = 'png' | 'tiff' | 'jpeg';
export type ExportErrorCode = 'UNSUPPORTED_FORMAT' | 'BAD_OPTION' | 'NOT_RGB' | 'CHANNEL_OUT_OF_RANGE';

export class ExportError extends Error {
  constructor(
    readonly code: ExportErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const EXPORT_MIME: Record<ExportFormat, string> = { png: 'image/png', tiff: 'image/tiff', jpeg: 'image/jpeg' };
export const EXPORT_EXT: Record<ExportFormat, string> = { png: 'png', tiff: 'tif', jpeg: 'jpg' };

/** The format an output name asks for (.png, .tif, .tiff, .jpg, .jpeg in any case). */
export function formatOf(file: string): ExportFormat {
  const ext = extname(file).toLowerCase();
  if (ext === '.png') return 'png';
  if (ext === '.tif' || ext === '.tiff') return 'tiff';
  if (ext === '.jpg' || ext === '.jpeg') return 'jpeg';
  throw new ExportError('UNSUPPORTED_FORMAT', `unsupported output extension "${ext || '(none)'}" (use .png, .tif, .tiff or .jpg)`);
}

/** `rgb`, `r`/`g`/`b`, or a 0-based plane number; null = the default for the image. */
export type ChannelChoice = 'rgb' | number;

export function parseChannel(text: string): ChannelChoice {
  const t = text.trim().toLowerCase();
  if (t === 'rgb') return 'rgb';
  const named = { r: 0, red: 0, g: 1, green: 1, b: 2, blue: 2 }[t];
  if (named !== undefined) return named;
  if (/^\d+$/.test(t)) return Number(t);
  throw new ExportError('BAD_OPTION', `--channel must be rgb, r, g, b or a plane number (got "${text}")`);
}

export interface RenderOptions {
  stretch: StretchMode;
  /** Bits per sample of the result. */
  bits: 8 | 16;
  channel?: ChannelChoice | null;
  /** One set of levels for all channels (default true for colour). */
  linked?: boolean;
  /** Explicit levels per output channel (one entry applies to all); defaults from the statistics otherwise. */
  levels?: ChannelLevels[] | null;
  /** HMS look of a linear RGB image: the run's recipe, or settings to solve one with. */
  hms?: { recipe: HmsRecipe | null; settings: HmsSettings } | null;
}

export interface RenderedImage {
  width: number;
  height: number;
  channels: 1 | 3;
  bits: 8 | 16;
  /** Interleaved samples, rows top-down. */
  data: Uint8Array | Uint16Array;
  levels: ChannelLevels[];
  stretch: StretchMode;
  flipped: boolean;
  /** 'run' / 'solved' when the HMS look was applied. */
  hms: 'run' | 'solved' | 'as_is' | null;
}

export async function renderFits(file: string, o: RenderOptions): Promise<RenderedImage> {
  if (o.bits !== 8 && o.bits !== 16) throw new ExportError('BAD_OPTION', `--bits must be 8 or 16 (got ${String(o.bits)})`);
  const reader = await FitsReader.open(file);
  try {
    const { width, height, planes } = reader.layout;
    const choice = o.channel ?? (planes >= 3 ? 'rgb' : 0);
    if (choice === 'rgb' && planes < 3) throw new ExportError('NOT_RGB', `the image has ${planes} plane${planes === 1 ? '' : 's'}; --channel rgb needs 3`);
    if (typeof choice === 'number' && (choice < 0 || choice >= planes)) throw new ExportError('CHANNEL_OUT_OF_RANGE', `plane ${choice} does not exist (the image has ${planes})`);
    const stretched = reader.header.getNumber('HMSLOGD') !== undefined;
    const look = o.stretch === 'hms' && !stretched;
    if (look && planes < 3) throw new ExportError('NOT_RGB', 'the HMS look needs an RGB image (3 planes)');
    const readPlanes = look || choice === 'rgb' ? [0, 1, 2] : [choice];
    const flipped = displayFlipped(rowOrder(reader.header));
    const n = width * height;
    const band = await reader.readRows(0, height, { planes: readPlanes });
    let data: Float32Array[] = readPlanes.map((_, i) => band.data.subarray(i * n, (i + 1) * n));
    let hms: RenderedImage['hms'] = o.stretch === 'hms' ? 'as_is' : null;
    if (look) {
      const recipe = o.hms?.recipe ?? solveRecipe(recipeSample(data), o.hms?.settings ?? hmsSettings(null));
      data = applyRecipe(data[0]!, data[1]!, data[2]!, recipe);
      hms = recipe.source;
      if (choice !== 'rgb') data = [data[choice]!];
    }
    const outCh = data.length as 1 | 3;
    let levels: ChannelLevels[];
    if (o.levels && o.levels.length > 0) {
      levels = data.map((_, i) => o.levels![Math.min(i, o.levels!.length - 1)]!);
      for (const l of levels) {
        const p = levelsProblem(l);
        if (p) throw new ExportError('BAD_OPTION', p);
      }
    } else {
      const stats = data.map((p) => {
        const a = new ChannelAccumulator(p.length);
        a.add(p);
        return a.finish(2);
      });
      levels = defaultLevels(o.stretch, stats, o.linked ?? outCh === 3);
    }
    const full = o.bits === 16 ? 65535 : 255;
    const out = o.bits === 16 ? new Uint16Array(n * outCh) : new Uint8Array(n * outCh);
    for (let y = 0; y < height; y++) {
      const src = (flipped ? height - 1 - y : y) * width;
      const dst = y * width * outCh;
      for (let c = 0; c < outCh; c++) {
        const plane = data[c]!;
        const l = levels[c]!;
        for (let x = 0; x < width; x++) out[dst + x * outCh + c] = Math.round(full * displayValue(plane[src + x]!, l, o.stretch));
      }
    }
    return { width, height, channels: outCh, bits: o.bits, data: out, levels, stretch: o.stretch, flipped, hms };
  } finally {
    await reader.close();
  }
}

/** Encodes a rendered image. */
export async function encodeImage(img: RenderedImage, format: ExportFormat): Promise<Buffer> {
  if (format === 'jpeg' && img.bits !== 8) throw new ExportError('BAD_OPTION', 'JPEG holds 8 bits per channel: use --bits 8, or PNG/TIFF for 16 bits');
  const space = img.bits === 16 ? (img.channels === 3 ? 'rgb16' : 'grey16') : img.channels === 3 ? 'srgb' : 'b-w';
  const s = sharp(img.data, { raw: { width: img.width, height: img.height, channels: img.channels }, limitInputPixels: false }).toColourspace(space);
  if (format === 'png') return s.png({ compressionLevel: 6 }).toBuffer();
  // TIFF: deflate with the horizontal predictor (sharp's default, JPEG-in-TIFF, would be 8-bit and lossy).
  if (format === 'tiff') return s.tiff({ compression: 'deflate', predictor: 'horizontal' }).toBuffer();
  return s.jpeg({ quality: 92, chromaSubsampling: '4:4:4' }).toBuffer();
}

/** Writes `bytes` to `file` under a temporary name in its folder, then renames it into place. */
export async function writeAtomic(file: string, bytes: Uint8Array): Promise<void> {
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, bytes, { flag: 'wx' });
    await rename(tmp, file);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
}
