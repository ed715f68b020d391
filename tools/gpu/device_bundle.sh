#!/bin/bash
# Packs what the real-GPU check (tools/gpu/device_check.sh) needs into .gpucheck/ (ignored by
# git, carried to the GPU machine): coli and the GPU test binaries from build/release, the shared
# libraries they load (ldd, without the C library itself, which the machine has), Debian's Vulkan
# loader (bundle.tar.xz), and two fixture families (fixtures.tar.xz). The GPU machine has no Debian packages and no network, so it runs
# these binaries rather than building (docs/gpu.md "On a real GPU").
# Usage: tools/gpu/device_bundle.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
out=.gpucheck
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
grep -qx '/.gpucheck/' .git/info/exclude 2>/dev/null || echo '/.gpucheck/' >> .git/info/exclude
bins=("$build/cli/coli")
for t in test_gpu_self_test test_gpu_experts test_gpu_invariance test_gpu_devices; do
    bins+=("$build/tests/gpu/$t")
done
cp "${bins[@]}" "$out/bin/"
loader=$(ldconfig -p | awk '/libvulkan.so.1 .*x86-64/ && !f {print $NF; f = 1}')
[ -n "$loader" ] || { echo "no libvulkan.so.1 here (apt-get install libvulkan1)" >&2; exit 1; }
cp -L "$loader" "$out/lib/libvulkan.so.1"
# Every library the binaries and the loader need, except glibc's own (the machine's must be used).
for b in "${bins[@]}" "$loader"; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libresolv)\.so' |
    while read -r lib; do cp -L "$lib" "$out/lib/"; done
strip --strip-unneeded "$out"/bin/* "$out"/lib/* 2>/dev/null || true
# Compressed, to stay within what travels (64 MiB with the repository): the binaries and
# libraries, and the two fixture families the check uses.
tar -C "$out" -cJf "$out/bundle.tar.xz" bin lib
rm -rf "$out/bin" "$out/lib"
tar -C "$build" -cJf "$out/fixtures.tar.xz" fixtures/olmoe fixtures/qwen3moe
du -sh "$out"
