#!/usr/bin/env bash
# Shows that a change leaves Raw Stack's outputs as they were: builds BASE (a commit, default
# HEAD) in a temporary clone, generates fixed-seed sessions once, runs Raw Stack on them with the
# BASE build and with this working tree's build (already built: `npm run build`), on the
# software adapter and on the TypeScript kernels, and compares each pair of run folders with
# bench/compare-runs.ts (FITS data byte for byte, artifacts without timings, run ids and dates).
#
#   bash bench/same-outputs.sh [BASE] [WORK_DIR]
#   SAME_OUTPUTS_DEVICES="gpu" bash bench/same-outputs.sh ...   # other device paths (default: software cpu)
#   SAME_OUTPUTS_IGNORE=phases bash bench/same-outputs.sh ...    # JSON keys the change adds on purpose
#
# Sessions (seeded, so both builds read the same bytes):
#   A  OSC 1024x768, 16 lights with bad frames, bias/darks/flats, the demo's defaults (every
#      phase runs where astrometry.net is installed);
#   B  the same lights with winsor rejection, background normalisation, uniform weights, both
#      cosmetic corrections, AutoBGE, a 64 MiB budget (several bands), calibrated frames in the
#      scratch folder, temporal-midpoint reference;
#   C  mono 640x480, 10 lights: median rejection and normalisation, polynomial BGE, 64 MiB;
#   D  an LRGB run queue, 6 lights per filter, per-filter flats.
# Prints one line per run pair and exits 1 when any pair differs. Runs take a few minutes.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-HEAD}
work=${2:-$(mktemp -d /tmp/same-outputs.XXXXXX)}
mkdir -p "$work"
echo "== base $base, work folder $work"

if [ ! -d "$work/base/dist" ]; then
  rm -rf "$work/base"
  git clone -q "$here" "$work/base" && git -C "$work/base" checkout -q "$base" || exit 2
  ln -s "$here/node_modules" "$work/base/node_modules"
  (cd "$work/base" && npm run build --silent) || { echo "base build failed"; exit 2; }
fi

data=$work/data
if [ ! -f "$data/lrgb/L/lights/light_00001.fits" ]; then
  node "$here/dist/src/cli.js" demo --out "$data/osc" --no-run >/dev/null || exit 2
  node "$here/dist/fixtures/cli.js" --out "$data/mono" --kind mono --frames 10 --width 640 --height 480 --seed 7 -q || exit 2
  node "$here/dist/src/cli.js" demo --kind lrgb --out "$data/lrgb" --frames 6 --width 384 --height 288 --seed 3 --no-run >/dev/null || exit 2
fi

cfg=$work/cfg
mkdir -p "$cfg"
osc="\"lights_dir\":\"$data/osc/lights\",\"bias_dir\":\"$data/osc/bias\",\"darks_dir\":\"$data/osc/darks\",\"flats_dir\":\"$data/osc/flats\",\"pcc\":{\"catalog_file\":\"$data/osc/catalogue.csv\"}"
echo "{$osc,\"run_name\":\"A\"}" >"$cfg/A.json"
echo "{$osc,\"run_name\":\"B\",\"rejection\":{\"method\":\"winsor\"},\"stacking\":{\"normalization\":\"background\",\"weighting\":\"uniform\",\"cosmetic_correction\":true,\"per_frame_cosmetic_correction\":true},\"bge\":{\"method\":\"autobge\"},\"runtime_limits\":{\"memory_budget\":64},\"output\":{\"keep_calibrated_frames\":false},\"registration_reference\":\"temporal_midpoint\"}" >"$cfg/B.json"
echo "{\"lights_dir\":\"$data/mono/lights\",\"bias_dir\":\"$data/mono/bias\",\"darks_dir\":\"$data/mono/darks\",\"flats_dir\":\"$data/mono/flats\",\"run_name\":\"C\",\"rejection\":{\"method\":\"median\"},\"stacking\":{\"normalization\":\"median\"},\"bge\":{\"fit_method\":\"poly\"},\"runtime_limits\":{\"memory_budget\":64}}" >"$cfg/C.json"
queue=""
for f in L R G B; do queue="$queue${queue:+,}{\"filter\":\"$f\",\"input_dir\":\"$data/lrgb/$f/lights\"}"; done
echo "{\"queue\":[$queue],\"bias_dir\":\"$data/lrgb/L/bias\",\"darks_dir\":\"$data/lrgb/L/darks\",\"flats_dir\":\"$data/lrgb/flats\",\"run_name\":\"D\"}" >"$cfg/D.json"

status=0
for c in A B C D; do
  for dev in ${SAME_OUTPUTS_DEVICES:-software cpu}; do
    for side in base work; do
      build=$here
      [ "$side" = base ] && build=$work/base
      out=$work/runs/$side/$c-$dev
      rm -rf "$out"
      mkdir -p "$out"
      (cd "$build" && SKYSTACK_DEVICE=$dev node dist/src/cli.js rawstack --config "$cfg/$c.json" --runs-dir "$out") >"$out.log" 2>&1
    done
    a=$(ls -d "$work/runs/base/$c-$dev"/*/ | head -1)
    b=$(ls -d "$work/runs/work/$c-$dev"/*/ | head -1)
    result=$(node "$here/dist/bench/compare-runs.js" "$a" "$b" ${SAME_OUTPUTS_IGNORE:+--ignore-keys "$SAME_OUTPUTS_IGNORE"})
    rc=$?
    [ $rc -eq 0 ] || status=1
    echo "$c $dev: $(echo "$result" | tail -1)"
    [ $rc -eq 0 ] || echo "$result" | head -20
  done
done
exit $status
