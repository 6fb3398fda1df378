// Whether a tiled run can be resumed from a phase: a pure function of what the run folder holds
// (gathered by resume.ts) and the configuration the resume would run with.
// A resume from phase k is feasible when the run's configuration is recorded, its inputs are
// still there and unchanged, and every phase before k has a valid record (its hash and the chain
// to the previous record hold), a checkpoint whose SHA-256 matches the record, the files that
// checkpoint points to intact, and no configuration key it read changed (compared per key: the
// dotted leaf keys under each key the phase recorded). Because each phase's conditions hold or
// fail on their own, the phases a resume can start from are a prefix of the plan: from the first
// phase up to `earliest_feasible_phase`, the first phase that has to run again (the plan's last
// phase when nothing has to). Reasons, in order of precedence:
//   unsupported_resume_phase: from_phase is not a phase of the tiled plan;
//   config_missing: the run's config.yaml is missing or unreadable;
//   input_missing: a light of the run is gone or changed (size, or SHA-256 when scanned with checksums);
//   artifacts_missing / config_changed_upstream: the first phase before from_phase that breaks the
//   chain is missing something (missing_files) or read a changed key (changed_keys).

import { isDeepStrictEqual } from 'node:util';
import type { PhaseRecord } from './state.js';
import { getPath, isPlainObject } from '../../config/merge.js';
import { artifactPath, RUN_LAYOUTS } from '../../shared/run-layout.js';
import { checkpointPath } from './checkpoint.js';

/** How a missing phase record is named in missing_files: the records file and the phase. */
const recordRef = (name: string) => `${artifactPath(RUN_LAYOUTS.tiled, 'phase_records.json')}#${name}`;

export type ResumeReason = 'unsupported_resume_phase' | 'config_missing' | 'input_missing' | 'artifacts_missing' | 'config_changed_upstream';

/** What the run folder says about one phase of the plan. */
export interface PhaseFacts {
  name: string;
  /** The phase's entry in phase_records.json, or null when it has none. */
  record: PhaseRecord | null;
  /** Whether the record's own hash and its link to the previous record hold. */
  recordValid: boolean;
  /** Files this phase's hand-over lacks: its checkpoint (missing or not matching the record) and the files the checkpoint points to that are gone or changed. */
  missingFiles: string[];
}

export interface FeasibilityInput {
  plan: readonly string[];
  fromPhase: string;
  /** The tiled settings the run last ran with (config.yaml), or null when missing. */
  previousConfig: Record<string, unknown> | null;
  /** The tiled settings the resume would run with. */
  nextConfig: Record<string, unknown> | null;
  /** Facts per phase of the plan, in plan order (phases without facts count as never run). */
  phases: readonly PhaseFacts[];
  /** Lights of the run that are gone or changed. */
  missingInputs: readonly string[];
}

export interface Feasibility {
  feasible: boolean;
  reason?: ResumeReason;
  message?: string;
  missing_files?: string[];
  changed_keys?: string[];
  /** The first phase that has to run again: a resume can start there or at any phase before it. */
  earliest_feasible_phase: string | null;
  /** The phases a resume from from_phase runs (empty when from_phase is not in the plan). */
  would_rerun: string[];
}

/** The dotted leaf keys under `key` whose values differ between `a` and `b`. */
export function changedKeys(key: string, a: unknown, b: unknown): string[] {
  if (isDeepStrictEqual(a ?? null, b ?? null)) return [];
  if (isPlainObject(a) && isPlainObject(b)) {
    const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return names.flatMap((n) => changedKeys(`${key}.${n}`, a[n], b[n]));
  }
  return [key];
}

/** Why phase `f` cannot be handed on: the files it lacks and the keys it read that changed. */
function problemsOf(f: PhaseFacts | undefined, name: string, prev: Record<string, unknown> | null, next: Record<string, unknown> | null): { missing: string[]; changed: string[] } {
  if (!f || !f.record) return { missing: [recordRef(name)], changed: [] };
  const missing = [...f.missingFiles];
  if (!f.recordValid) missing.push(recordRef(name));
  if (!f.record.checkpoint) missing.push(checkpointPath({ layout: RUN_LAYOUTS.tiled }, name));
  const changed = f.record.config_keys.flatMap((k) => changedKeys(k, getPath(prev, k), getPath(next, k)));
  return { missing: [...new Set(missing)], changed: [...new Set(changed)] };
}

export function resumeFeasibility(input: FeasibilityInput): Feasibility {
  const { plan } = input;
  const from = plan.indexOf(input.fromPhase);
  const first = plan[0] ?? null;
  if (from < 0) {
    return { feasible: false, reason: 'unsupported_resume_phase', message: `${JSON.stringify(input.fromPhase.slice(0, 64))} is not a phase of the tiled plan (${plan.join(', ')})`, earliest_feasible_phase: first, would_rerun: [] };
  }
  const would_rerun = plan.slice(from);
  if (input.previousConfig === null || input.nextConfig === null) {
    return { feasible: false, reason: 'config_missing', message: "the run's config.yaml is missing or unreadable", earliest_feasible_phase: first, would_rerun };
  }
  if (from > 0 && input.missingInputs.length > 0) {
    return { feasible: false, reason: 'input_missing', message: `${input.missingInputs.length} light(s) of the run are gone or changed`, missing_files: [...input.missingInputs], earliest_feasible_phase: first, would_rerun };
  }
  const byName = new Map(input.phases.map((p) => [p.name, p]));
  let earliest = plan.length - 1;
  let firstReason: ResumeReason | null = null;
  const missing: string[] = [];
  const changed: string[] = [];
  for (let i = 0; i < plan.length - 1; i++) {
    const p = problemsOf(byName.get(plan[i]!), plan[i]!, input.previousConfig, input.nextConfig);
    if (p.missing.length === 0 && p.changed.length === 0) continue;
    if (firstReason === null) {
      earliest = i;
      firstReason = p.missing.length > 0 ? 'artifacts_missing' : 'config_changed_upstream';
    }
    if (i < from) {
      missing.push(...p.missing);
      changed.push(...p.changed);
    } else break;
  }
  const earliestName = plan[earliest]!;
  if (from <= earliest) return { feasible: true, earliest_feasible_phase: earliestName, would_rerun };
  const reason = firstReason!;
  return {
    feasible: false,
    reason,
    message: reason === 'artifacts_missing' ? `files ${earliestName} needs from the phases before it are missing or changed: resume from ${earliestName} or earlier` : `configuration keys read before ${input.fromPhase} changed: resume from ${earliestName} or earlier`,
    ...(missing.length ? { missing_files: [...new Set(missing)] } : {}),
    ...(changed.length ? { changed_keys: [...new Set(changed)] } : {}),
    earliest_feasible_phase: earliestName,
    would_rerun,
  };
}
