#!/usr/bin/env bash
# The GPU bench on a lent GPU machine, in one call (after bash bench/gpu/pack.sh here):
#   device run: command "bash bench/gpu/on-device.sh --label 'lent H100'", carry [".carry"]
# Unpacks Node and the app (dist + trimmed node_modules) from .carry/ into $APP (not the
# checkout: its node_modules may be a link to another checkout's), loads the carried Vulkan
# loader when the system has none, checks that Dawn gets a HARDWARE adapter (exit 3 otherwise,
# with the loader's diagnostics), then runs test/gpu on it and `bench gpu` (device record,
# bandwidth, every kernel, idle CPU, Raw Stack end to end on gpu and cpu).
# Writes under $OUT (6 files): log.txt (everything), nvidia-smi.csv, probe.json, test-gpu.txt,
# gpu-bench.json, results-section.md (append it to bench/RESULTS.md).
# Options: --allow-software (rehearsal on a machine without a GPU: the software adapter stands
# in), --quick, --frames N, --size WxH, --no-rawstack, --label TEXT; others go to `bench gpu`.
# Typical time on the device: ~4–6 min for the full sizes (dataset generation included).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
: "${OUT:?OUT must name the folder for the results}"
mkdir -p "$OUT"
APP=${APP:-/tmp/skystack-app}
ALLOW=0
QUICK=0
LABEL=""
BENCH=()
while [ $# -gt 0 ]; do
  case "$1" in
    --allow-software) ALLOW=1 ;;
    --quick) QUICK=1; BENCH+=(--quick) ;;
    --label) LABEL=$2; shift ;;
    *) BENCH+=("$1") ;;
  esac
  shift
done
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$SECONDS
step() { echo "== [$((SECONDS - t0)) s] $*"; }
die() { echo "ON-DEVICE FAILED: $1"; exit "${2:-1}"; }

step "machine: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,pstate --format=csv | tee "$OUT/nvidia-smi.csv"
else
  echo "no nvidia-smi" | tee "$OUT/nvidia-smi.csv"
fi

# xz and tar -J are usually there; Python's lzma stands in where they are not.
unxz_to() { if command -v xz >/dev/null; then xz -dc "$1" > "$2"; else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; fi; }
step "unpacking node and the app into $APP"
[ -s .carry/node.xz ] && [ -s .carry/app.tar.xz ] || die "no .carry/node.xz or .carry/app.tar.xz: run bash bench/gpu/pack.sh and carry .carry"
rm -rf "$APP" && mkdir -p "$APP/bin" || die "cannot create $APP"
unxz_to .carry/node.xz "$APP/bin/node" && chmod +x "$APP/bin/node" || die "node did not unpack"
export PATH="$APP/bin:$PATH"
node --version || die "the carried node does not run here"
unxz_to .carry/app.tar.xz "$APP/app.tar" && tar -C "$APP" --no-same-owner -xf "$APP/app.tar" && rm -f "$APP/app.tar" || die "app.tar.xz did not unpack"
# The checkout's tracked folders (shaders/, fixtures/, bench/ ...) beside the unpacked dist/.
for f in "$REPO"/*; do
  name=$(basename "$f")
  [ "$name" = dist ] || [ "$name" = node_modules ] || ln -sfn "$f" "$APP/$name"
done
cd "$APP"

step "Vulkan loader"
if ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  echo "system loader: $(ldconfig -p | grep 'libvulkan\.so\.1 ' | head -1)"
else
  VK=$APP/vulkan
  for d in "$REPO"/.carry/debs/*.deb; do dpkg -x "$d" "$VK" || die "dpkg -x $d failed"; done
  export LD_LIBRARY_PATH="$VK/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "carried loader: $(ls "$VK"/usr/lib/x86_64-linux-gnu/libvulkan.so.1*)"
fi
ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d 2>/dev/null
SOFT=()
if [ -s "$REPO/.carry/swiftshader.tar.xz" ]; then
  mkdir -p "$APP/swiftshader" && unxz_to "$REPO/.carry/swiftshader.tar.xz" "$APP/swiftshader.tar" && tar -C "$APP/swiftshader" --no-same-owner -xf "$APP/swiftshader.tar" \
    && SOFT=(--software-icd "$APP/swiftshader/vk_swiftshader_icd.json") && echo "software path: carried SwiftShader (VK_DRIVER_FILES for that path only)"
fi

PROBE=()
[ "$ALLOW" = 1 ] && PROBE=(--allow-software)
probe() { node dist/bench/gpu/probe.js "${PROBE[@]}" > "$OUT/probe.json"; }
step "adapter probe"
probe
ok=$?
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ $ok -ne 0 ] && [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nv" ]; then
  echo "no hardware adapter with the default ICD search; retrying with VK_DRIVER_FILES=$nv"
  export VK_DRIVER_FILES=$nv __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  probe
  ok=$?
fi
cat "$OUT/probe.json"
if [ $ok -ne 0 ]; then
  echo "--- diagnostics"
  ldconfig -p | grep -iE 'vulkan|nvidia' | head -20
  VK_LOADER_DEBUG=error,warn,driver node dist/bench/gpu/probe.js 2>&1 | head -60
  die "Dawn got no hardware GPU adapter (see probe.json and the loader's messages above)" 3
fi

DEV=gpu
[ "$ALLOW" = 1 ] && DEV=auto
step "test/gpu on SKYSTACK_DEVICE=$DEV"
SKYSTACK_DEVICE=$DEV timeout 120 node dist/test/run.js '^gpu/' > "$OUT/test-gpu.txt" 2>&1
tests=$?
tail -n 25 "$OUT/test-gpu.txt"

step "bench gpu"
# --deadline-s: what has not started 300 s in is skipped (and recorded so), inside timeout's 360.
GPU_ARGS=(--json "$OUT/gpu-bench.json" --out "$OUT/results-section.md" --no-record --deadline-s 300)
[ "$ALLOW" = 1 ] && GPU_ARGS+=(--allow-software)
[ -n "$LABEL" ] && GPU_ARGS+=(--label "$LABEL")
timeout 360 node dist/bench/run.js gpu "${GPU_ARGS[@]}" "${SOFT[@]}" "${BENCH[@]}"
bench=$?
step "done: tests exit $tests, bench exit $bench (quick $QUICK)"
[ $tests -eq 0 ] && [ $bench -eq 0 ] || exit 1
