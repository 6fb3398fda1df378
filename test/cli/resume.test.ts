// `skystack resume` from the command line on a tiled run made by `skystack tiled`: --dry-run
// --json exits 0 with {run_id, run_dir, from_phase, feasible, earliest_feasible_phase,
// would_rerun} and writes nothing; a resume from STACKING exits 0 with --json's last line
// {run_id, run_dir, status, phases, from_phase} naming only the phases it ran; a --config that
// changes an upstream key exits 2 naming the key (and dry-run exits 1); a Raw Stack folder and
// a missing --from-phase exit 2.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDataset } from '../../fixtures/generator/index.js';
import { main } from '../../src/cli/main.js';
import { withTempDir } from '../helpers/tmp.js';

async function captured(f: () => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  const o = process.stdout.write;
  const e = process.stderr.write;
  let out = '';
  let err = '';
  process.stdout.write = ((c: string | Uint8Array) => ((out += String(c)), true)) as typeof process.stdout.write;
  process.stderr.write = ((c: string | Uint8Array) => ((err += String(c)), true)) as typeof process.stderr.write;
  try {
    return { code: await f(), out, err };
  } finally {
    process.stdout.write = o;
    process.stderr.write = e;
  }
}

const lastLine = (out: string) => JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
const OFF = ['--set', 'astrometry.enabled=false', '--set', 'pcc.enabled=false', '--set', 'bge.method=none', '--set', 'hypermetric_stretch.enabled=false', '--set', 'tile.star_min_count=2', '--set', 'local_metrics.min_frames=4'];

test('skystack resume: dry run, resume from STACKING, upstream change refused, Raw Stack and usage errors', () =>
  withTempDir('cli-resume', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'mono', frames: 6, width: 160, height: 128, seed: 12, calibration: false, badFrames: 'none', starDensity: 8000 });
    const run = await captured(() => main(['tiled', '--input-dir', join(dir, 'data', 'lights'), '--runs-dir', join(dir, 'runs'), '--run-name', 'cli', ...OFF, '--json']));
    assert.is(run.code, 0, run.err.slice(-2000));
    const runDir = lastLine(run.out).run_dir as string;

    const dry = await captured(() => main(['resume', '--run-dir', runDir, '--from-phase', 'STACKING', '--dry-run', '--json']));
    assert.is(dry.code, 0, dry.err);
    const verdict = lastLine(dry.out);
    assert.equal(Object.keys(verdict).sort(), ['earliest_feasible_phase', 'feasible', 'from_phase', 'run_dir', 'run_id', 'would_rerun']);
    assert.equal([verdict.feasible, verdict.from_phase, (verdict.would_rerun as string[])[0]], [true, 'STACKING', 'STACKING']);

    const resumed = await captured(() => main(['resume', '--run-dir', runDir, '--from-phase', 'STACKING', '--json']));
    assert.is(resumed.code, 0, resumed.err.slice(-2000));
    const last = lastLine(resumed.out) as { status: string; from_phase: string; phases: { phase: string }[]; run_dir: string };
    assert.equal([last.status, last.from_phase, last.run_dir, last.phases[0]!.phase], ['ok', 'STACKING', runDir, 'STACKING']);
    assert.not.ok(last.phases.some((p) => p.phase === 'TILE_GRID'));

    const cfg = join(dir, 'changed.yaml');
    await writeFile(cfg, `input: { input_dir: ${JSON.stringify(join(dir, 'data', 'lights'))} }\ntile: { size_factor: 20, star_min_count: 2 }\nlocal_metrics: { min_frames: 4 }\nastrometry: { enabled: false }\npcc: { enabled: false }\nbge: { method: none }\nhypermetric_stretch: { enabled: false }\n`);
    const refused = await captured(() => main(['resume', '--run-dir', runDir, '--from-phase', 'STACKING', '--config', cfg, '--json']));
    assert.is(refused.code, 2, refused.err);
    assert.match(refused.err, /changed_keys: tile\.size_factor/);
    assert.equal((lastLine(refused.out).error as { code: string }).code, 'RESUME_PHASE_NOT_FEASIBLE');
    const dryRefused = await captured(() => main(['resume', '--run-dir', runDir, '--from-phase', 'STACKING', '--config', cfg, '--dry-run']));
    assert.is(dryRefused.code, 1);
    assert.match(dryRefused.err, /changed: tile\.size_factor/);

    const raw = join(dir, 'raw');
    await mkdir(raw);
    await writeFile(join(raw, 'run.json'), JSON.stringify({ run_id: 'raw', kind: 'rawstack', created_at: '', status: 'ok', input: {}, job_id: null }));
    const rawCode = await captured(() => main(['resume', '--run-dir', raw, '--from-phase', 'STACKING']));
    assert.is(rawCode.code, 2);
    assert.match(rawCode.err, /Raw Stack run/);
    assert.is((await captured(() => main(['resume', '--run-dir', runDir]))).code, 2);
  }),
);

test.run();
