#!/bin/bash
# The VRAM tier on a real GPU (issue 16): run on the GPU machine from the repository root, with
# .gpucheck/ made here by tools/gpu/device_bundle.sh and carried. About 5 minutes on an H200:
#   1. the devices Vulkan sees and the GPU self-test (its verdict and values compared);
#   2. the kernel tests and the placement invariance on two families (olmoe, qwen3moe) and the
#      default model: bit-identical tokens and logits with the GPU holding all / half / one expert;
#   3. a reduced OLMoE-shape model generated there (tools/bigmodel/make_synthetic.py, torch) and
#      converted to int4-g64, then `coli bench decode --resident` with --gpu none vs the GPU.
# Usage: tools/gpu/device_check.sh [GPU]   GPU: a device name substring (default: NVIDIA;
# `llvmpipe` runs the same steps on Mesa's CPU driver, for trying the script out).
# Writes its log and figures to $OUT (or ./gpucheck-out).
set -uo pipefail
gpu=${1:-NVIDIA}
root=$PWD
b=$root/.gpucheck
out=${OUT:-$root/gpucheck-out}
mkdir -p "$out"
exec > >(tee "$out/device_check.log") 2>&1
step() { echo; echo "=== $(date +%T) $*"; }
[ -f "$b/bundle.tar.xz" ] || { echo "no .gpucheck/ (run tools/gpu/device_bundle.sh, carry it)"; exit 2; }
x=/tmp/gpucheck
mkdir -p $x && tar -C $x -xJf "$b/bundle.tar.xz"
export LD_LIBRARY_PATH=$x/lib COLI_VULKAN_LOADER=$x/lib/libvulkan.so.1
export XDG_CACHE_HOME=$out/cache OMP_WAIT_POLICY=passive COLI_TEST_GPU=$gpu
coli=$x/bin/coli
# The test binaries name the fixtures and the default model by this checkout's path here.
if [ ! -e /work/main/resources ]; then mkdir -p /work && ln -sfn "$root" /work/main; fi
mkdir -p /work/main/build/release && tar -C /work/main/build/release -xJf "$b/fixtures.tar.xz"
if ! "$coli" info resources/models/colibri-moe-tiny 2>&1 | grep -qi "Vulkan devices:.*$gpu"; then
    # A driver installed outside the loader's search path (as on the lent NVIDIA machines).
    for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
             /usr/share/vulkan/icd.d/nvidia_icd.json; do
        [ -f "$f" ] && export VK_DRIVER_FILES=$f && break
    done
fi

step "devices"
nvidia-smi -L 2>/dev/null || true
"$coli" info resources/models/colibri-moe-tiny 2>&1 | grep -A4 "Vulkan devices"

step "self-test and kernel tests"
"$x/bin/test_gpu_devices" --gtest_brief=1
"$x/bin/test_gpu_self_test" 2>&1 | grep -E "verdict|self-test|OK|FAILED|PASSED|SKIPPED" | head -20
"$x/bin/test_gpu_experts" --gtest_brief=1 2>&1 | grep -E "gpu experts|FAILED|PASSED|SKIPPED"

step "placement invariance (olmoe, qwen3moe, default model)"
timeout 240 "$x/bin/test_gpu_invariance" \
    --gtest_filter='Families/GpuInvariance.*/0:Families/GpuInvariance.*/2:GpuInvarianceDefaultModel.*' \
    2>&1 | grep -E "VRAM|streamed|OK|FAILED|PASSED|SKIPPED"

scale=${COLI_CHECK_SCALE:-4} # 16 for a quick try on a CPU
step "reduced OLMoE-shape model (scale-down $scale of hidden 2048, expert FFN 1024; 16 layers x 64, top-8)"
m=/tmp/olmoe-r$scale
rm -rf $m $m-q4
${PYTHON:-python3} tools/bigmodel/make_synthetic.py --out $m --scale-down $scale > /dev/null &&
    "$coli" convert $m $m-q4 > /dev/null || { echo "no model"; exit 1; }

step "bench decode, resident: CPU only vs the GPU"
for g in none "$gpu"; do
    extra=()
    [ "$g" != none ] && extra=(--vram-budgets 0,50%,100%)
    timeout 150 "$coli" bench decode $m-q4 --resident --gpu "$g" "${extra[@]}" --runs 3 -n 32 \
        -t "$(nproc)" 2>&1 | grep -vE "^\s*$"
done
step "done"
