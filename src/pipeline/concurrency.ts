// Bounded concurrency for per-file work (runtime_limits.parallel_workers): at most `limit` calls
// of `fn` are in flight, items start in input order. The first failure (an exception, a
// CancelledError from ctx.checkCancelled) stops new items from starting; the calls already
// running are awaited before it is rethrown, so no file handle or worker task outlives the call.

export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async () => {
    while (failure === null) {
      const i = next++;
      if (i >= items.length) return;
      try {
        await fn(items[i]!, i);
      } catch (e) {
        failure ??= { error: e };
      }
    }
  };
  const lanes = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  await Promise.all(Array.from({ length: lanes }, worker));
  if (failure !== null) throw (failure as { error: unknown }).error;
}
