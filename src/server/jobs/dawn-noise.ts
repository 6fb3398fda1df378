// Dawn prints warnings from native code on every adapter request (docs/ARCHITECTURE.md "GPU strategy"). They are
// expected and say nothing about the job, so the job log leaves them out (with a count).

const DAWN_NOISE = /^Warning: (maxDynamic(Uniform|Storage)BuffersPerPipelineLayout artificially reduced|Couldn't load Vulkan)/;

/** A line filter with state: the native stack-trace lines that follow a warning go too. */
export class DawnNoiseFilter {
  hidden = 0;
  private inTrace = false;

  /** The last line judged was one of Dawn's warnings or its trace (what follows may still be trace). */
  get afterWarning(): boolean {
    return this.inTrace;
  }

  keep(line: string): boolean {
    if (DAWN_NOISE.test(line)) {
      this.hidden++;
      this.inTrace = true;
      return false;
    }
    if (this.inTrace && (/^\s+at operator\(\)/.test(line) || line.trim() === '')) return false;
    this.inTrace = false;
    return true;
  }
}
