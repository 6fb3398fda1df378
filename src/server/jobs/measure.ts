// FWHM of one frame for /api/config/suggest, measured in a child process (`skystack job
// --measure-fwhm FILE [--cfa]`, the job child's entry point): decoding a frame and detecting its
// stars is whole-frame CPU work that must not run on the server's event loop. The child is
// killed after a time limit; one measurement runs at a time and one more may wait, further
// requests get no measurement ("busy") instead of piling up children. The file was confined by
// the caller (a scan under the server's roots).

import { execFile } from 'node:child_process';

export type FwhmResult = { ok: true; fwhm: number } | { ok: false; reason: string };

export interface FwhmMeasurerOptions {
  cliPath: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

export class FwhmMeasurer {
  private tail: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  constructor(private readonly o: FwhmMeasurerOptions) {}

  measure(file: string, cfa: boolean): Promise<FwhmResult> {
    if (this.waiting >= 2) return Promise.resolve({ ok: false, reason: 'another measurement is running; pass the scan figures or a run_id' });
    this.waiting++;
    const run = this.tail.then(() => this.spawn(file, cfa));
    this.tail = run.finally(() => this.waiting--);
    return run;
  }

  private spawn(file: string, cfa: boolean): Promise<FwhmResult> {
    // The API token is the server's secret; children never need it.
    const { SKYSTACK_TOKEN: _token, ...env } = this.o.env ?? process.env;
    const args = [this.o.cliPath, 'job', '--measure-fwhm', file, ...(cfa ? ['--cfa'] : [])];
    return new Promise((resolve) => {
      execFile(process.execPath, args, { env, timeout: this.o.timeoutMs ?? 30_000, killSignal: 'SIGKILL', maxBuffer: 64 * 1024, windowsHide: true }, (err, stdout) => {
        const line = stdout.trim().split('\n').pop() ?? '';
        let parsed: { fwhm?: unknown; error?: unknown } = {};
        try {
          parsed = JSON.parse(line) as typeof parsed;
        } catch {
          parsed = {};
        }
        if (typeof parsed.fwhm === 'number' && Number.isFinite(parsed.fwhm)) resolve({ ok: true, fwhm: parsed.fwhm });
        else if (typeof parsed.error === 'string') resolve({ ok: false, reason: parsed.error });
        else resolve({ ok: false, reason: err && (err as { killed?: boolean }).killed ? 'the measurement took too long' : 'the measurement failed' });
      });
    });
  }
}
