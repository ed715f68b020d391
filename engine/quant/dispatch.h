#pragma once
// Run-time choice of the quantised kernel implementation.
//   Scalar: portable reference, always available; defines the results.
//   Avx2:   x86-64 with AVX2 and FMA (checked with __builtin_cpu_supports); file compiled with
//           -mavx2 -mfma, nothing else is.
//   Neon:   aarch64 with the dot-product extension (vdotq_s32; HWCAP_ASIMDDP); file compiled with
//           -march=armv8.2-a+dotprod, only on aarch64.
//   Avx512Vnni: x86-64 with AVX-512 F/BW/VL and VNNI (VPDPBUSD on 256-bit vectors); file compiled
//           with those flags, nothing else is.
// Every path gives bit-identical outputs (see matmul.h for the fixed summation order), so the
// choice changes speed only.
// Thread-safety: all functions are safe to call concurrently.
namespace coli::quant {

enum class KernelPath { Scalar, Avx2, Neon, Avx512Vnni };

// "scalar", "avx2", "neon", "avx512vnni".
const char* kernelPathName(KernelPath path);

// Compiled into this binary AND supported by the CPU running it.
bool kernelPathAvailable(KernelPath path);

// The fastest available path (Avx512Vnni, then Avx2 or Neon when available, else Scalar). The
// environment variable COLI_QUANT_PATH=scalar|avx2|neon|avx512vnni overrides it when that path is
// available (for measurements); read once.
KernelPath selectedKernelPath();

} // namespace coli::quant
