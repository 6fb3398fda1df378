// The viewer's levels panel: histogram (log counts, per channel in its colour) with the current
// transfer curve and the black, midtone and white markers, and the controls that edit the
// levels of the image shown as A: black and white points in data units, the midtones balance,
// all channels together when linked, one chosen channel otherwise.

import type { ChannelLevels, DisplayParams } from '../shared/stretch-math.js';
import { displayValue } from '../shared/stretch-math.js';
import type { HistogramView, ImageSource } from './viewer-source.js';

const COLOURS = ['#e5534b', '#57ab5a', '#539bf5'];

export interface LevelsElements {
  canvas: HTMLCanvasElement;
  channel: HTMLSelectElement;
  black: HTMLInputElement;
  mid: HTMLInputElement;
  white: HTMLInputElement;
}

export class LevelsPanel {
  private source: ImageSource | null = null;
  onChange: (p: DisplayParams) => void = () => {};

  constructor(private readonly el: LevelsElements) {
    for (const input of [el.black, el.mid, el.white]) input.addEventListener('change', () => this.edited());
    el.channel.addEventListener('change', () => this.fill());
  }

  show(source: ImageSource): void {
    this.source = source;
    const ch = source.params.channels.length;
    const { channel } = this.el;
    channel.replaceChildren();
    const names = ch === 3 ? ['R', 'G', 'B'] : ['grey'];
    if (source.params.linked || ch === 1) channel.append(new Option(ch === 1 ? 'grey' : 'R, G, B (linked)', 'all'));
    else names.forEach((n, i) => channel.append(new Option(n, String(i))));
    channel.disabled = channel.options.length < 2;
    this.fill();
  }

  private channelIndex(): number {
    const v = this.el.channel.value;
    return v === 'all' || v === '' ? 0 : Number(v);
  }

  /** Writes the chosen channel's levels into the inputs and redraws. */
  fill(): void {
    const s = this.source;
    if (!s) return;
    const c = s.params.channels[this.channelIndex()]!;
    const digits = (v: number) => (Math.abs(v) >= 1000 ? v.toFixed(1) : Math.abs(v) >= 1 ? v.toFixed(4) : v.toPrecision(5));
    this.el.black.value = digits(c.black);
    this.el.white.value = digits(c.white);
    this.el.mid.value = c.mid.toFixed(5);
    this.draw();
  }

  private edited(): void {
    const s = this.source;
    if (!s) return;
    const black = Number(this.el.black.value);
    const white = Number(this.el.white.value);
    const mid = Number(this.el.mid.value);
    const bad = !(Number.isFinite(black) && Number.isFinite(white) && white > black) ? 'white must be above black' : !(mid > 0 && mid < 1) ? 'midtones must lie between 0 and 1' : '';
    for (const i of [this.el.black, this.el.white, this.el.mid]) i.setAttribute('aria-invalid', String(bad !== '' && (i !== this.el.mid || bad.startsWith('mid'))));
    if (bad) return;
    const idx = this.channelIndex();
    const all = this.el.channel.value === 'all';
    const channels: ChannelLevels[] = s.params.channels.map((c, i) => (all || i === idx ? { ...c, black, white, mid } : c));
    this.onChange({ ...s.params, channels });
  }

  draw(): void {
    const s = this.source;
    const cv = this.el.canvas;
    const ctx = cv.getContext('2d')!;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = '#15181c';
    ctx.fillRect(0, 0, cv.width, cv.height);
    if (!s) return;
    const hists: HistogramView[] | null = s.look === 'hms' ? s.lookHistogram : s.info.stats.map((st) => st.histogram);
    if (!hists) return;
    const c0 = s.params.channels[this.channelIndex()]!;
    // x axis: from just below the black point to where the curve nears white (or the white
    // point), so a strong stretch shows the sky and the rising curve, not one bin at the left.
    const lo = Math.min(...hists.map((h) => h.lo));
    const hi = Math.max(...hists.map((h) => h.hi));
    let top = c0.white;
    if (displayValue(c0.black + 0.5 * (c0.white - c0.black), c0, s.params.mode) > 0.9) {
      let a = c0.black;
      let b = c0.white;
      for (let i = 0; i < 50; i++) {
        const m = (a + b) / 2;
        if (displayValue(m, c0, s.params.mode) < 0.97) a = m;
        else b = m;
      }
      top = Math.min(c0.white, c0.black + 1.5 * (b - c0.black));
    }
    const x1 = Math.min(Math.max(hi, c0.black + 1e-12), top);
    const x0 = Math.max(lo, c0.black - 0.06 * (x1 - c0.black));
    const W = cv.width;
    const H = cv.height;
    const xs = (v: number) => ((v - x0) / (x1 - x0 || 1)) * W;
    ctx.globalCompositeOperation = 'lighter';
    hists.forEach((h, ci) => {
      const n = h.counts.length;
      const bw = (h.hi - h.lo) / n || 1;
      const cols = new Float64Array(W);
      for (let i = 0; i < n; i++) {
        const px = Math.floor(xs(h.lo + (i + 0.5) * bw));
        if (px >= 0 && px < W) cols[px] = cols[px]! + h.counts[i]!;
      }
      const top = Math.log1p(Math.max(...cols));
      ctx.fillStyle = hists.length === 3 ? COLOURS[ci]! : '#c9d1d9';
      ctx.globalAlpha = 0.8;
      for (let x = 0; x < W; x++) {
        if (!cols[x]) continue;
        const bh = (Math.log1p(cols[x]!) / (top || 1)) * (H - 4);
        ctx.fillRect(x, H - bh, 1, bh);
      }
    });
    ctx.globalCompositeOperation = 'source-over';
    ctx.globalAlpha = 1;
    // The transfer curve of the chosen channel, and its markers.
    ctx.strokeStyle = '#f0f3f6';
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    for (let x = 0; x <= W; x += 2) {
      const v = x0 + (x / W) * (x1 - x0);
      const y = H - 2 - displayValue(v, c0, s.params.mode) * (H - 4);
      if (x === 0) ctx.moveTo(x, y);
      else ctx.lineTo(x, y);
    }
    ctx.stroke();
    const midInput = c0.black + c0.mid * (c0.white - c0.black);
    for (const [v, colour] of [
      [c0.black, '#8b949e'],
      [midInput, '#f0a202'],
      [c0.white, '#f0f3f6'],
    ] as [number, string][]) {
      ctx.fillStyle = colour;
      ctx.fillRect(Math.round(xs(v)) - 1, 0, 2, H);
    }
  }
}
