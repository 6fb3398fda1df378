// The run's artifact list: every file a run writes is registered once, with its type and the
// phase that wrote it, under its path relative to the run folder; the report phase writes the
// list as the manifest (artifacts_manifest.json) and the reports show it. Any phase of any
// pipeline registers here, so the list lives below the phases, never in one of them.

export interface ArtifactEntry {
  type: string;
  phase: string;
  /** Relative to the run folder. */
  path: string;
}

/** What a pipeline's state carries for the manifest. */
export interface ArtifactList {
  artifacts: ArtifactEntry[];
}

/** Registers an artifact for the manifest (idempotent by path). */
export function addArtifact(state: ArtifactList, type: string, phase: string, path: string): void {
  if (!state.artifacts.some((a) => a.path === path)) state.artifacts.push({ type, phase, path });
}
