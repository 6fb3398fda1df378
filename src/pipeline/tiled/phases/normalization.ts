// CHANNEL_SPLIT and NORMALIZATION.
// CHANNEL_SPLIT records the colour mode only: OSC frames stay CFA mosaics until STACKING's band
// chain debayers them (bilinear), so nothing is split here.
// NORMALIZATION measures every frame's per-channel background and spread (Raw Stack's channel
// statistics stage: OSC per Bayer colour) and records them in normalization.json; the stacking
// engine applies normalization.mode against the reference frame (addscale, background, median,
// none; normalization.enabled false = none).

import { ok } from '../../phase.js';
import { cfaChannelPrepPhase } from '../../rawstack/phases/cfa-channel-prep.js';
import { fromRawStack, writeArtifact, tiledPhase } from '../records.js';
import type { TiledPhase } from '../reasons.js';

export const channelSplitPhase: TiledPhase = tiledPhase('CHANNEL_SPLIT', ['input.input_mode', 'input.bayer_pattern'], {
  name: 'CHANNEL_SPLIT',
  optional: false,
  async run(ctx) {
    const s = ctx.state;
    const osc = s.colorMode === 'OSC';
    return ok({ mode: s.colorMode, channels: osc ? ['R', 'G', 'B'] : ['L'], bayer_pattern: osc ? s.bayer : null, note: osc ? 'CFA mosaics until STACKING debayers them (bilinear) in its band chain' : 'mono' });
  },
});

export const normalizationPhase: TiledPhase = tiledPhase('NORMALIZATION', ['normalization'], {
  name: 'NORMALIZATION',
  optional: false,
  async run(ctx) {
    const outcome = await fromRawStack(cfaChannelPrepPhase).run(ctx);
    if (outcome.status !== 'ok') return outcome;
    const s = ctx.state;
    const n = s.config.tiled.normalization;
    const frames = s.frames.filter((f) => f.status === 'included' && f.normalization);
    const channels = s.colorMode === 'OSC' ? ['R', 'G', 'B'] : ['L'];
    const col = (c: number, k: 'location' | 'spread') => frames.map((f) => f.normalization![c]![k]);
    const body = {
      mode: n.enabled ? n.mode : 'none',
      color_mode: s.colorMode,
      bayer_pattern: s.colorMode === 'OSC' ? s.bayer : null,
      channels,
      frames: frames.map((f) => ({ index: f.index, file: f.name })),
      background: Object.fromEntries(channels.map((c, i) => [c, col(i, 'location')])),
      spread: Object.fromEntries(channels.map((c, i) => [c, col(i, 'spread')])),
      applied_by: 'STACKING (against the reference frame)',
    };
    const rel = await writeArtifact(s, 'NORMALIZATION', 'normalization.json', body);
    return ok({ ...(outcome.details ?? {}), mode: body.mode, artifact: rel });
  },
});
