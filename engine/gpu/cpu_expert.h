#pragma once
// The CPU's routed expert on one token, as the Fast forward pass computes it
// (forward/fast_ffn.cpp): gate and up on the token's int8 input (quant/matmul.h), act =
// siluShared(gate) * up, act quantised in the down projection's groups, down. The GPU's
// reference in the self-test and the tests.
#include "core/status.h"
#include "gpu/expert_runner.h"

namespace coli::gpu {

// y [dModel] for one token: xq [dModel] int8, xs [dModel / G] (G: the gate's group size).
// Errors: Numeric when act is not finite (the forward pass reports it then too).
// Thread-safety: pure.
Status cpuExpert(const ExpertShape& s, const uint8_t* gate, const uint8_t* up, const uint8_t* down,
                 const int8_t* xq, const float* xs, float* y);

} // namespace coli::gpu
