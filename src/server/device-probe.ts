// Which compute device jobs will get, asked once at start-up in a child process (acquiring a
// device in the server would block its event loop on a software adapter and put Dawn's
// native code inside the server, docs/ARCHITECTURE.md "Processes"). Until the probe answers, info says `probing`.

import { execFile } from 'node:child_process';
import type { DeviceInfo } from '../gpu/device.js';

export type DeviceStatus =
  | { state: 'probing' }
  | { state: 'ready'; info: DeviceInfo }
  | { state: 'failed'; message: string };

export function probeDevice(cliPath: string, env: NodeJS.ProcessEnv = process.env, timeoutMs = 60_000): { status: () => DeviceStatus; done: Promise<DeviceStatus> } {
  let current: DeviceStatus = { state: 'probing' };
  const done = new Promise<DeviceStatus>((resolve) => {
    execFile(process.execPath, [cliPath, 'job', '--probe-device'], { env, timeout: timeoutMs, maxBuffer: 1 << 20, shell: false }, (err, stdout) => {
      const line = stdout
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{'));
      try {
        if (!line) throw new Error(err ? err.message.split('\n')[0] : 'no answer');
        current = { state: 'ready', info: JSON.parse(line) as DeviceInfo };
      } catch (e) {
        current = { state: 'failed', message: (e as Error).message };
      }
      resolve(current);
    });
  });
  return { status: () => current, done };
}
