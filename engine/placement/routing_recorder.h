#pragma once
// Recording the router's choices while a model reads a prompt and continues it greedily: the code
// behind `coli trace` (which writes each token as a JSON line, docs/cli.md "coli trace") and
// behind `coli plan` when it has neither a trace nor usage history (it keeps the choices as a
// cachesim::RoutingTraceFile for the simulator).
// Thread-safety: call from the thread that owns the model's forward() (the engine thread); the
// callbacks run on it, between forward() calls.
#include "cachesim/trace_reader.h"
#include "core/status.h"
#include "forward/model.h"
#include "runtime/session.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace coli::placement {

// One token's routing: row `row` of `routing` (every MoE layer's top-k ids and gate weights).
struct TracedToken {
    int pos = 0;    // position in the sequence
    int32_t id = 0; // the token id
    bool generated = false;
    const RoutingTrace* routing = nullptr;
    int row = 0;
};

struct TraceRunSummary {
    int promptTokens = 0;
    int generated = 0;
    std::string stop; // "none" (no continuation asked), "max tokens", "eos", "context full",
                      // "cancelled"
    std::vector<int> moeLayers;
    int topK = 0;
};

// Runs the prompt `ids` (non-empty) as one forward pass, calls onPrompt(routing) once with its
// trace (before any token), onToken for every prompt token, then generates up to maxNewTokens
// greedily (argmax), one forward per token, calling onToken for each; stops at an EOS id of the
// model's generation config, at the context length, or when *cancel (may be null) turns true.
// Errors: InvalidArgument for no ids; the forward pass's error, its message prefixed with
// "forward failed: " or "forward failed at position N: ".
Result<TraceRunSummary> traceRouting(const LoadedModel& lm, std::span<const int32_t> ids,
                                     int maxNewTokens, const std::atomic<bool>* cancel,
                                     const std::function<void(const RoutingTrace&)>& onPrompt,
                                     const std::function<void(const TracedToken&)>& onToken);

// The routing of `prompt` (encoded with the tokenizer's special tokens) and maxNewTokens greedy
// tokens, as the trace reader would have parsed `coli trace`'s output (`name` for messages).
// Errors: InvalidArgument when the prompt has no tokens; traceRouting's; Cancelled when *cancel
// turned true.
Result<cachesim::RoutingTraceFile> recordRoutingTrace(const LoadedModel& lm,
                                                      const std::string& prompt, int maxNewTokens,
                                                      const std::atomic<bool>* cancel,
                                                      const std::string& name);

// The short built-in prompt `coli plan` records when it has nothing better (plain English prose
// on everyday topics, about 60 tokens), and the greedy tokens it adds.
const std::string& builtinPlanPrompt();
constexpr int kBuiltinPlanNewTokens = 32;

} // namespace coli::placement
