// Server test helpers: a real server on an ephemeral port (in-process or as a `skystack
// serve` child for the restart test), a raw HTTP client that can set any header (Host and
// Origin included), and tiny generated fixtures for real Raw Stack jobs.

import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { generateDataset } from '../../fixtures/generator/index.js';
import { startServer, type RunningServer } from '../../src/server/app.js';
import type { ServerOptions } from '../../src/server/context.js';

export const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
/** Job children run the TypeScript kernels in tests: deterministic and no adapter noise. */
export const CHILD_ENV = { ...process.env, SKYSTACK_DEVICE: 'cpu' };

export async function testServer(o: Partial<ServerOptions> & { runsDir: string }): Promise<RunningServer> {
  return startServer({ host: '127.0.0.1', port: 0, roots: [], maxConcurrentJobs: 1, childEnv: CHILD_ENV, log: () => undefined, ...o });
}

export interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export function http(base: string, method: string, path: string, opts: { headers?: Record<string, string>; body?: unknown; raw?: string | Buffer } = {}): Promise<Res> {
  // Host and port from `base` only: a path such as `//api/x` must not be read as another host.
  const url = new URL(base);
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  let payload: Buffer | undefined;
  if (opts.raw !== undefined) payload = Buffer.isBuffer(opts.raw) ? opts.raw : Buffer.from(opts.raw);
  else if (opts.body !== undefined) {
    payload = Buffer.from(JSON.stringify(opts.body));
    headers['content-type'] ??= 'application/json';
  }
  if (payload) headers['content-length'] = String(payload.length);
  return new Promise((resolve, reject) => {
    // `path` is sent as written (no normalisation), so hostile paths reach the server intact.
    const req = request({ host: url.hostname, port: url.port, method, path, headers, setHost: !('host' in headers) && !('Host' in headers) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown = undefined;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

export async function waitFor<T>(f: () => Promise<T | undefined | null | false>, timeoutMs: number, stepMs = 25): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** Small mono lights that register and stack (no bad frames, dense stars). */
export async function tinyLights(out: string, frames = 6, width = 192, height = 144, seed = 5): Promise<string> {
  await generateDataset({ out, kind: 'mono', frames, width, height, seed, calibration: false, badFrames: 'none', starDensity: 8000 });
  return `${out}/lights`;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `skystack serve` as its own process (restart test); resolves with its URL. */
export async function serveProcess(args: string[]): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], { env: CHILD_ENV, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 15000);
    proc.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /serving (http:\/\/[^/\s]+)\/ui\//.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    proc.on('exit', () => reject(new Error(`serve exited: ${err}`)));
  });
  return { proc, url };
}
