#include "forward/phase_times.h"

#include <array>

namespace coli {

namespace {

// In Phase's order; a missing name would be empty (test_phase_times checks every one).
constexpr std::array<std::string_view, kPhaseCount> kNames = {"embedding",
                                                              "attention norm",
                                                              "q/k/v projections",
                                                              "q_a norm (MLA)",
                                                              "q_b projection (MLA)",
                                                              "RoPE, KV append",
                                                              "attention over KV",
                                                              "o input quantised",
                                                              "o projection",
                                                              "FFN norm",
                                                              "router",
                                                              "top-k, expert cache",
                                                              "expert inputs gathered",
                                                              "gate/up projections",
                                                              "down projections",
                                                              "routed experts (whole)",
                                                              "streamed expert handout",
                                                              "down, combine, residual",
                                                              "final norm",
                                                              "LM head"};

} // namespace

std::string_view phaseName(Phase p) {
    return size_t(p) < kPhaseCount ? kNames[size_t(p)] : "?";
}

} // namespace coli
