// `node dist/bench/gpu/probe.js [--allow-software]`: which adapter SKYSTACK_DEVICE (default gpu;
// auto with --allow-software) gets, as one JSON line (adapter info, how it was acquired,
// timestamp-query support). Exit status 0 only for a hardware GPU (or, with --allow-software, a
// software adapter), else 3: bench/gpu/on-device.sh runs it first, so a machine whose GPU Dawn
// cannot reach fails loudly before any test or bench runs on the wrong adapter.

import { acquireDevice, devicePreferenceFromEnv } from '../../src/gpu/device.js';

const allowSoftware = process.argv.includes('--allow-software');
const preference = process.env.SKYSTACK_DEVICE ? devicePreferenceFromEnv() : allowSoftware ? 'auto' : 'gpu';
try {
  const { acquired, info } = await acquireDevice(preference);
  const a = acquired?.adapter.info;
  const line = {
    preference,
    kind: info.kind,
    adapter: a ? { vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description } : null,
    timestamp_query: acquired ? acquired.device.features.has('timestamp-query') : false,
    info,
  };
  console.log(JSON.stringify(line));
  acquired?.device.destroy();
  const ok = info.kind === 'gpu' || (allowSoftware && info.kind === 'software');
  if (!ok) console.error(`probe: no hardware GPU adapter (got ${info.kind}${info.fallbackReason ? `: ${info.fallbackReason}` : ''})`);
  process.exitCode = ok ? 0 : 3;
} catch (e) {
  console.log(JSON.stringify({ preference, error: (e as Error).message }));
  console.error(`probe: ${(e as Error).message}`);
  process.exitCode = 3;
}
