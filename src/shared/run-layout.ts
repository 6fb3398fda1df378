// Where everything lies in a run folder, per pipeline kind: the one place that knows the layout
// (docs/ARCHITECTURE.md "Run folders"). Paths are relative to the run folder, `/`-separated, so
// the server, the CLI, the pipelines and the browser all use the same strings; the pipeline side
// makes them absolute (src/pipeline/run-folder.ts).
//   rawstack: run.json, outputs/ (outputs/masters/, outputs/calibrated/), artifacts/preprocess/
//             holding events.jsonl, effective_config.json, the diagnostics and the reports
//             (preprocessing_report.{json,md,html});
//   tiled:    run.json, config.yaml, logs/run_events.jsonl (the same event schema),
//             artifacts/<phase>.json, artifacts/report.{json,md,html}, outputs/.
// Every kind keeps `.scratch/` (files a run needs only while it lasts, removed when it ends; the
// leading dot keeps it out of artifact listings).

export type RunKind = 'rawstack' | 'tiled';

export interface RunLayout {
  readonly kind: RunKind;
  /** The run record (run.json). */
  readonly record: string;
  /** Image outputs, and the folders below it. */
  readonly outputs: string;
  readonly masters: string;
  readonly calibrated: string;
  /** Diagnostics, tables and reports. */
  readonly artifacts: string;
  /** The event log (one JSON object per line). */
  readonly events: string;
  /** The configuration the run used. */
  readonly config: string;
  /** The reports and the artifact manifest. */
  readonly report: { readonly json: string; readonly markdown: string; readonly html: string };
  readonly manifest: string;
  /** The per-frame quality table, where the pipeline writes one. */
  readonly frameTable: string | null;
  readonly scratch: string;
  /** Top-level folders an artifact listing covers. */
  readonly listed: readonly string[];
}

const join = (...parts: string[]): string => parts.join('/');

/** The run record: the same file in every kind of run folder (it names the kind). */
export const RUN_RECORD = 'run.json';

/** Held while a process runs or resumes the run (src/pipeline/run-lock.ts); every kind, at the top. */
export const RUN_LOCK = '.run.lock';

function layout(kind: RunKind, artifacts: string, events: string, config: string, report: string, frameTable: string | null): RunLayout {
  return {
    kind,
    record: RUN_RECORD,
    outputs: 'outputs',
    masters: 'outputs/masters',
    calibrated: 'outputs/calibrated',
    artifacts,
    events,
    config,
    report: { json: join(artifacts, `${report}.json`), markdown: join(artifacts, `${report}.md`), html: join(artifacts, `${report}.html`) },
    manifest: join(artifacts, 'artifacts_manifest.json'),
    frameTable: frameTable === null ? null : join(artifacts, frameTable),
    scratch: '.scratch',
    listed: [artifacts.split('/')[0]!, 'outputs', ...(events.startsWith('logs/') ? ['logs'] : [])],
  };
}

export const RUN_LAYOUTS: Readonly<Record<RunKind, RunLayout>> = {
  rawstack: layout('rawstack', 'artifacts/preprocess', 'artifacts/preprocess/events.jsonl', 'artifacts/preprocess/effective_config.json', 'preprocessing_report', 'frame_quality.csv'),
  tiled: layout('tiled', 'artifacts', 'logs/run_events.jsonl', 'config.yaml', 'report', null),
};

/** The layout of a run whose run.json says `kind`; run folders from before the field are Raw Stack's. */
export function layoutOf(kind: unknown): RunLayout {
  return kind === 'tiled' ? RUN_LAYOUTS.tiled : RUN_LAYOUTS.rawstack;
}

/**
 * Where a kind keeps its configuration revisions (`<id>.yaml` + `index.json`), or null for a kind
 * whose runs have none (Raw Stack: not resumable, so no revision functions).
 */
export const configRevisionsPath = (layout: RunLayout): string | null => (layout.kind === 'tiled' ? join(layout.artifacts, 'config_revisions') : null);

/** An artifact's path: `name` inside the layout's artifacts folder. */
export const artifactPath = (layout: RunLayout, name: string): string => join(layout.artifacts, name);

/** An output's path: `name` inside outputs/. */
export const outputPath = (layout: RunLayout, name: string): string => join(layout.outputs, name);

/** The calibrated copy of light `index` (0-based input order): cal_NNNNN.fit, NNNNN = index + 1. */
export const calibratedFrameName = (index: number): string => `cal_${String(index + 1).padStart(5, '0')}.fit`;

/** The name (without extension) of an image output lying directly in outputs/, else null. */
export function outputImageName(layout: RunLayout, path: string): string | null {
  const prefix = `${layout.outputs}/`;
  if (!path.startsWith(prefix)) return null;
  const m = /^([^/]+)\.(fits?|fts)$/i.exec(path.slice(prefix.length));
  return m ? m[1]! : null;
}

/** `path` (relative to the run folder) as seen from a file in the artifacts folder (links in reports). */
export function fromArtifacts(layout: RunLayout, path: string): string {
  const prefix = `${layout.artifacts}/`;
  if (path.startsWith(prefix)) return path.slice(prefix.length);
  return '../'.repeat(layout.artifacts.split('/').length) + path;
}
