// Peak resident memory (RSS) of this process over one phase, for the phase_end event and the
// report's timing table. Two sources, the larger wins:
// - the kernel's lifetime high-water mark (process.resourceUsage().maxRSS): when it rose during
//   the phase, its new value IS the phase's peak, exactly, even inside synchronous work;
// - otherwise (the phase stayed below an earlier phase's peak) RSS sampled every SAMPLE_MS on the
//   event loop, a lower bound that misses peaks inside long synchronous stretches.
// Worker threads share the process, so their memory counts; GPU memory does not.

const SAMPLE_MS = 50;
const MiB = 1024 * 1024;

export interface RssSampler {
  /** Stops sampling; the phase's peak RSS in MiB (one decimal). */
  stop(): number;
}

export function startRssSampler(): RssSampler {
  const maxStart = process.resourceUsage().maxRSS; // KiB
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, SAMPLE_MS);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage.rss());
      const maxEnd = process.resourceUsage().maxRSS;
      if (maxEnd > maxStart) peak = Math.max(peak, maxEnd * 1024);
      return Math.round((peak / MiB) * 10) / 10;
    },
  };
}
