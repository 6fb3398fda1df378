// Starting a worker thread with the parent's Node flags, for every worker of the program (the
// kernel pool, the frame workers, the LN fit worker).
// A worker gets the parent's flags so that what the user asked of Node (source maps, --cpu-prof,
// loaders) holds in every thread. Two kinds of parent flag make `new Worker` fail instead:
//   - -e/-p/--input-type: refused for a file entry point (a parent started with `node -e`);
//   - V8 and process-wide options (--max-old-space-size, --stack-size, --trace-*, --title…):
//     refused in a worker's execArgv (ERR_WORKER_INVALID_EXEC_ARGV), though V8's flags are
//     process-wide and hold in the worker anyway.
// Node publishes no list of the second kind, so the refusal itself is the list: the flags it
// names are dropped (with a separate value that follows them) and the worker started again;
// what was learned holds for the process. Invariant: a flag the parent was started with never
// makes a worker fail to start.

import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Flags a worker refused in this process (ERR_WORKER_INVALID_EXEC_ARGV), by name. */
const refused = new Set<string>();

const flagName = (arg: string) => arg.split('=', 1)[0]!;

/** The parent's flags less those a file-entry worker refuses (known ones and those already refused here). */
export function workerExecArgv(argv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-e' || a === '--eval' || a === '-p' || a === '--print') {
      i++;
      continue;
    }
    if (a.startsWith('--input-type') || a.startsWith('--eval=') || a.startsWith('--print=')) continue;
    if (refused.has(flagName(a))) {
      // `--stack-size 2000`: the value goes with its flag.
      if (!a.includes('=') && i + 1 < argv.length && !argv[i + 1]!.startsWith('-')) i++;
      continue;
    }
    out.push(a);
  }
  return out;
}

/** The flag names an ERR_WORKER_INVALID_EXEC_ARGV lists ("…flags: --a, --b=1"); empty if it lists none. */
export function refusedFlags(message: string): string[] {
  const at = message.lastIndexOf(': ');
  if (at < 0) return [];
  return message
    .slice(at + 2)
    .split(', ')
    .map((s) => flagName(s.trim()))
    .filter((s) => s.startsWith('-'));
}

/**
 * `new Worker(url, options)` with workerExecArgv(argv) as its execArgv; flags the worker refuses
 * are learned and dropped, then it starts without them (at worst with no flags at all).
 */
export function startWorker(url: URL, options: Omit<WorkerOptions, 'execArgv'> = {}, argv: readonly string[] = process.execArgv): Worker {
  for (;;) {
    const execArgv = workerExecArgv(argv);
    try {
      return new Worker(url, { ...options, execArgv });
    } catch (e) {
      if ((e as { code?: string }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw e;
      const names = refusedFlags((e as Error).message).filter((n) => !refused.has(n));
      if (names.length === 0) {
        // Nothing new named: this is not about the flags we pass; start with none.
        return new Worker(url, { ...options, execArgv: [] });
      }
      for (const n of names) refused.add(n);
    }
  }
}
