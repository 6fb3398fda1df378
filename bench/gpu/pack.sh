#!/usr/bin/env bash
# Packs what the GPU bench needs on a lent GPU machine (x86-64, no Node, no network) into
# .carry/ (ignored by git), for one device call: bash bench/gpu/on-device.sh with carry [".carry"].
#   .carry/node.xz        this machine's Node binary (self-contained nodesource build), xz
#   .carry/app.tar.xz     dist/ (no source maps, no web UI) + the node_modules the bench, the
#                         Raw Stack child and test/gpu import (bench/gpu/pack-list.ts), trimmed:
#                         webgpu with linux-x64's dawn.node only, no type declarations or READMEs
#   .carry/debs/*.deb     the Vulkan loader (libvulkan1, amd64), which Dawn dlopens
#   .carry/swiftshader.tar.xz  Chromium's SwiftShader Vulkan driver, if this machine has it: the
#                         software adapter on the device, which has no Mesa
# Builds first (npm run build). Prints the sizes and what the call would send in all (tracked +
# untracked files + .carry), and fails above LIMIT_MIB (default 60: the device takes 64 MiB).
# Usage: bash bench/gpu/pack.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
LIMIT_MIB=${LIMIT_MIB:-60}
[ "$(uname -m)" = x86_64 ] || { echo "pack: this machine is $(uname -m); the device is x86-64 and needs x86-64 node and dawn.node" >&2; exit 1; }
[ "${1:-}" = --no-build ] || npm run build --silent

mkdir -p .carry/debs
git check-ignore -q .carry || { echo "pack: .carry/ is not ignored by git (add it to .gitignore)" >&2; exit 1; }

# Node: recompressed only when the binary changed.
node_bin=$(command -v node)
stamp="$(node --version) $(stat -c '%s %Y' "$node_bin")"
if [ ! -s .carry/node.xz ] || [ "$(cat .carry/node.stamp 2>/dev/null)" != "$stamp" ]; then
  echo "pack: compressing $node_bin ($(node --version))"
  xz -T0 -6 -c "$node_bin" > .carry/node.xz.tmp && mv .carry/node.xz.tmp .carry/node.xz
  echo "$stamp" > .carry/node.stamp
fi

# Vulkan loader, amd64 whatever this machine's architecture (the device README's recipe).
if ! ls .carry/debs/libvulkan1_*.deb >/dev/null 2>&1; then
  echo "pack: downloading libvulkan1 (amd64)"
  mkdir -p /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update -qq >/dev/null 2>&1 || echo "pack: apt-get update failed; trying the download anyway"
  (cd .carry/debs && apt-get $o download libvulkan1 2>&1 | grep -v '^W: Download is performed unsandboxed') || true
  ls .carry/debs/libvulkan1_*.deb >/dev/null 2>&1 || { echo "pack: could not download libvulkan1" >&2; exit 1; }
fi

# SwiftShader (Vulkan on the CPU, no dependencies beyond libc/libm/libgcc), when this machine has
# it (Chromium ships it): the device has no Mesa, so it stands in as the software adapter there.
ss_dir=${SWIFTSHADER_DIR:-/usr/lib/chromium}
if [ -f "$ss_dir/libvk_swiftshader.so" ] && [ -f "$ss_dir/vk_swiftshader_icd.json" ]; then
  if [ ! -s .carry/swiftshader.tar.xz ] || [ "$ss_dir/libvk_swiftshader.so" -nt .carry/swiftshader.tar.xz ]; then
    tar -C "$ss_dir" -cf - libvk_swiftshader.so vk_swiftshader_icd.json | xz -T0 -6 > .carry/swiftshader.tar.xz.tmp && mv .carry/swiftshader.tar.xz.tmp .carry/swiftshader.tar.xz
  fi
else
  rm -f .carry/swiftshader.tar.xz
  echo "pack: no SwiftShader in $ss_dir (set SWIFTSHADER_DIR): the device run measures no software adapter"
fi

# dist + trimmed node_modules. node_modules may be a link (a worktree's): tar reads through it.
mapfile -t modules < <(node dist/bench/gpu/pack-list.js)
[ "${#modules[@]}" -gt 0 ] || { echo "pack: no packages listed" >&2; exit 1; }
for m in "${modules[@]}"; do [ -d "$m" ] || { echo "pack: $m missing" >&2; exit 1; }; done
[ -f node_modules/webgpu/dist/linux-x64/dawn.node ] || { echo "pack: node_modules/webgpu/dist/linux-x64/dawn.node missing" >&2; exit 1; }
echo "pack: packages: ${modules[*]#node_modules/}"
excludes=(
  --exclude='dist/ui' --exclude='*.map' --exclude='*.d.ts' --exclude='*.d.cts' --exclude='*.d.mts'
  --exclude='README.md' --exclude='CHANGELOG.md' --exclude='node_modules/webgpu/build'
  --exclude='node_modules/webgpu/dist/darwin-*' --exclude='node_modules/webgpu/dist/win32-*' --exclude='node_modules/webgpu/dist/linux-arm64'
  --exclude='node_modules/zod/src'
)
tar -C "$root" --owner=0 --group=0 "${excludes[@]}" -cf - dist "${modules[@]}" | xz -T0 -6 > .carry/app.tar.xz.tmp
mv .carry/app.tar.xz.tmp .carry/app.tar.xz

# What the device call would send: tracked + untracked-not-ignored files, and .carry.
carry=$(du -sb .carry | cut -f1)
tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 -r stat -L -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "pack: .carry/node.xz $(mib "$(stat -c %s .carry/node.xz)"), .carry/app.tar.xz $(mib "$(stat -c %s .carry/app.tar.xz)"), .carry/debs $(mib "$(du -sb .carry/debs | cut -f1)"), .carry/swiftshader.tar.xz $(mib "$(stat -c %s .carry/swiftshader.tar.xz 2>/dev/null || echo 0)")"
echo "pack: .carry $(mib "$carry") + working tree $(mib "$tree") = $(mib $((carry + tree))) of the 64 MiB a device call takes"
if [ $((carry + tree)) -gt $((LIMIT_MIB * 1048576)) ]; then
  echo "pack: over ${LIMIT_MIB} MiB: the call would be refused or leave no margin" >&2
  exit 1
fi
