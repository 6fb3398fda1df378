// `skystack serve [--host H] [--port P] [--runs-dir D] [--state-dir D] [--root DIR ...]
// [--token T] [--max-jobs N]`: the REST API and web UI (docs/ARCHITECTURE.md "Processes", docs/threat-model.md). Environment:
// SKYSTACK_HOST, SKYSTACK_PORT, SKYSTACK_RUNS_DIR, SKYSTACK_STATE_DIR, SKYSTACK_DATA_ROOTS
// (":"-separated), SKYSTACK_TOKEN. A generated token is printed once on stderr.

import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { UsageError } from './usage.js';

export async function runServe(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'runs-dir': { type: 'string' },
      'state-dir': { type: 'string' },
      root: { type: 'string', multiple: true, default: [] },
      token: { type: 'string' },
      'max-jobs': { type: 'string' },
      'allowed-host': { type: 'string', multiple: true, default: [] },
    },
  });
  const env = process.env;
  const host = values.host ?? env.SKYSTACK_HOST ?? '127.0.0.1';
  const port = Number(values.port ?? env.SKYSTACK_PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0..65535, got ${values.port ?? env.SKYSTACK_PORT}`);
  const maxJobs = Number(values['max-jobs'] ?? env.SKYSTACK_MAX_JOBS ?? 1);
  if (!Number.isInteger(maxJobs) || maxJobs < 1 || maxJobs > 64) throw new UsageError('--max-jobs must be an integer 1..64');
  const roots = [...(values.root ?? []), ...(env.SKYSTACK_DATA_ROOTS ?? '').split(':').filter((r) => r.length > 0)];
  const { startServer } = await import('../server/app.js');
  const s = await startServer({
    host,
    port,
    runsDir: values['runs-dir'] ?? env.SKYSTACK_RUNS_DIR ?? 'runs',
    ...(values['state-dir'] ?? env.SKYSTACK_STATE_DIR ? { stateDir: values['state-dir'] ?? env.SKYSTACK_STATE_DIR } : {}),
    roots,
    token: values.token ?? env.SKYSTACK_TOKEN ?? null,
    maxConcurrentJobs: maxJobs,
    allowedHosts: values['allowed-host'] ?? [],
  });
  const given = values.token ?? env.SKYSTACK_TOKEN;
  process.stderr.write(`skystack serving ${s.url}/ui/ (API ${s.url}/api), runs dir ${s.context.runsDir}\n`);
  process.stderr.write(`allowed roots: ${s.context.guard.list().join(', ')}\n`);
  if (s.token && !given) {
    // The fragment never reaches the server or its logs; the UI signs in with it and drops it.
    process.stderr.write(`bearer token (shown once): ${s.token}\n`);
    process.stderr.write(`web UI, signed in: ${s.url}/ui/#token=${encodeURIComponent(s.token)}\n`);
    if (host === '0.0.0.0' || host === '::') process.stderr.write(`from other machines: http://${hostname()}:${s.port}/ui/#token=${encodeURIComponent(s.token)}\n`);
  } else if (s.token) {
    process.stderr.write('the API needs the token: the web UI asks for it once (or open it as /ui/#token=<token>)\n');
  }
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.stderr.write('stopping: cancelling running jobs...\n');
      void s.close().then(resolve);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}
