// glibc malloc settings for the processes that run a pipeline (the CLI's device commands, the
// server's job children), set by skystack itself so that a user gets them without exporting
// anything. glibc reads MALLOC_* only at process start, so a process that lacks them runs its
// command again in a child that has them (src/cli/main.ts); a job child is spawned with them.
//   MALLOC_ARENA_MAX=2         per-thread arenas capped: llvmpipe's threads and the frame workers
//                              each get an arena otherwise, and freed frame buffers stay in them;
//   MALLOC_MMAP_THRESHOLD_     fixed at 128 KiB: glibc's dynamic threshold grows past a frame's
//                              size after the first free, and later frames then come from the heap
//                              and stay resident after they are freed (bench/RESULTS.md: ~100-150
//                              MiB of Raw Stack's peak on 2048×1536 frames);
//   GLIBC_TUNABLES=glibc.malloc.hugetlb=1  (glibc 2.35+; older ones ignore it) the mmap'd chunks
//                              that threshold makes of every frame-sized buffer are advised as
//                              transparent huge pages: each buffer is fresh pages the kernel must
//                              fault in, 512× fewer faults with 2 MiB pages (on a VM where faults are
//                              dear: 10-13 % of a Raw Stack run's wall time, the same peak RSS at 30
//                              and 1000 frames; bench/RESULTS.md 2026-12-07). Where THP is off it
//                              does nothing; where it is 'always' the pages were huge already.
// And one V8 setting, through NODE_OPTIONS (V8 too reads it only at process start):
//   --max-semi-space-size=1    (MiB) V8's young generation kept small in every thread: it grows
//                              to 16 MiB semi-spaces under the pipeline's short-lived objects and
//                              then stays committed; 1 MiB took 20-30 MiB off every phase of a
//                              30-frame Raw Stack run and no time (bench/RESULTS.md 2026-12-08).
// Invariants: a value the user set wins (only missing names are added: a GLIBC_TUNABLES of the
// user's own is kept whole, a NODE_OPTIONS gets the V8 flag appended unless it sets that flag
// itself); nothing is changed off Linux (other allocators do not read these names, and the
// relaunch that brings the settings is Linux's); the child flag stops a second relaunch.

/** The settings, name → value (one source of truth: the CLI, the job children and the benches). */
export const MALLOC_TUNING: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' };

/** The V8 flag added to NODE_OPTIONS (head comment). */
export const V8_TUNING_FLAG = '--max-semi-space-size=1';

/** NODE_OPTIONS with the V8 flag appended, unless it sets the young generation's size itself. */
function withV8Tuning(options: string | undefined): string {
  if (options && /--max-semi-space-size\b/.test(options)) return options;
  return options && options.trim() !== '' ? `${options} ${V8_TUNING_FLAG}` : V8_TUNING_FLAG;
}

/** Set in a child that was started with the settings: it never relaunches again. */
export const ALLOCATOR_CHILD_FLAG = 'SKYSTACK_ALLOCATOR_SET';

/** `env` with the settings added where missing (Linux only), and the child flag. */
export function withAllocatorTuning(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): NodeJS.ProcessEnv {
  if (platform !== 'linux') return env;
  const out: NodeJS.ProcessEnv = { ...env, [ALLOCATOR_CHILD_FLAG]: '1' };
  for (const [k, v] of Object.entries(MALLOC_TUNING)) if (out[k] === undefined) out[k] = v;
  out.NODE_OPTIONS = withV8Tuning(out.NODE_OPTIONS);
  return out;
}

/** Whether this process should run its command again with the settings (Linux, some missing, not yet relaunched). */
export function needsAllocatorRelaunch(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): boolean {
  if (platform !== 'linux' || env[ALLOCATOR_CHILD_FLAG] === '1') return false;
  return Object.keys(MALLOC_TUNING).some((k) => env[k] === undefined) || withV8Tuning(env.NODE_OPTIONS) !== env.NODE_OPTIONS;
}
