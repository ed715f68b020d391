#pragma once
// The topic probe (issue 12; docs/visualisation.md "Topic probe"): routes every prompt of a topic
// set through the engine's forward pass, prefill only (no token is sampled), and counts per topic
// and per prompt the routed slots of every (MoE layer, expert), plus the co-activation of expert
// pairs. The counts are exact integers read from the forward pass's own RoutingTrace.
//
// Definitions (the same as `coli route-stats`, docs/cli.md):
//   slot        one of a token's top-k choices in one MoE layer; a topic's slots of a layer sum
//               to tokens x top_k, so share_t(expert) = slots / (tokens_t x top_k).
//   co-activation  two experts routed for the same token, either both in one layer's top-k, or
//               one in MoE layer i and the other in the next MoE layer i + 1. Each unordered pair
//               is counted once per token and pair of layers, so a pair's count is at most the
//               routed tokens of either expert.
// Only each expert's kCoactivationPartners strongest partners are kept (largest count; ties: the
// lower partner index); the result is the union of those lists, each pair once.
//
// How prompts run: each prompt is encoded with the model's tokenizer without special tokens,
// then run from an empty KV cache after the model's BOS token (generation_config.json's
// bos_token_id, else config.json's; none when neither names one), as a document starts in
// training. The BOS token is context only: its routing is not counted, and tokens are the
// prompt's own. A prompt longer than the window (the model's context length less the BOS) is cut
// into windows of that length, each from an empty cache after the BOS: every token counts. Each
// window runs in chunks of ProbeOptions::chunkTokens through the same KV cache; between chunks
// progress is reported and the cancel flag read.
//
// No side effects besides the result: no token is sampled, and when the experts stream
// (ExpertCache) the learned heat is paused for the run (ExpertCache::setLearning) and restored to
// its previous switch afterwards, so neither the pins nor the usage database learn from it. The
// eviction order and tier telemetry do see the probe's routings (it is real traffic).
//
// Deterministic: the same model, load options, topic set and options give the same counts.
// Thread-safety: runTopicProbe runs on the calling thread (the engine thread in the app), which
// must be the only one using `model` meanwhile; `cancel` may be set from any thread.
#include "core/status.h"
#include "probe/topic_set.h"
#include "runtime/session.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace coli::probe {

inline constexpr int kCoactivationPartners = 16; // partners kept per expert
inline constexpr int kMinPromptsPerTopic = 20;   // issue 12's minimum size of a topic
inline constexpr int64_t kMinTokensPerTopic = 2000;

struct ProbeOptions {
    // The smallest topic the probe accepts. Tests lower them; the defaults are issue 12's.
    int minPrompts = kMinPromptsPerTopic;
    int64_t minTokens = kMinTokensPerTopic;
    int chunkTokens = 64; // tokens per forward call (progress and cancel between chunks)
    int windowTokens = 0; // tokens per window; 0 = the model's context length
    int partners = kCoactivationPartners;
};

struct ProbeProgress {
    int64_t tokensDone = 0;
    int64_t tokensTotal = 0;
    int topic = 0; // index of the topic being run
};
using ProbeProgressFn = std::function<void(const ProbeProgress&)>;

struct TopicStats {
    std::string id, label;
    int prompts = 0;
    int64_t tokens = 0;
    int64_t windows = 0;
};

struct PromptStats {
    int topic = 0; // index into ProbeResult::topics
    int64_t tokens = 0;
    // [nLayers * nExperts] routed slots of this prompt (dense layers' rows stay 0).
    std::vector<uint32_t> routedSlots;
};

// Experts are numbered layer * nExperts + expert over the model's decoder layers (dense layers
// included, as tiers::ExpertMap and viz/affinity.h do).
struct CoactivationCount {
    int32_t a = 0, b = 0; // a < b
    uint32_t count = 0;   // tokens
};

struct ProbeResult {
    std::string topicSetFile, topicSetName, topicSetSha256;
    int nLayers = 0;            // decoder layers (config num_hidden_layers)
    int nExperts = 0;           // routed experts per MoE layer
    int topK = 0;               // experts per token per MoE layer
    std::vector<int> moeLayers; // the MoE layers' indices, ascending
    std::vector<TopicStats> topics;
    // [topics, nLayers * nExperts] routed slots per topic (row-major by topic).
    std::vector<int64_t> routedSlots;
    std::vector<PromptStats> prompts;            // in the set's order, topic by topic
    std::vector<CoactivationCount> coactivation; // sorted by (a, b)
    int64_t tokens = 0;                          // over all topics

    int nRouted() const { return nLayers * nExperts; }
    int64_t slotsOf(int topic, int layer, int expert) const {
        return routedSlots[size_t(topic) * size_t(nRouted()) + size_t(layer) * nExperts + expert];
    }
    // slots / (tokens_t x top_k); 0 for a topic without tokens.
    double share(int topic, int layer, int expert) const;
};

// Runs the probe. Errors: InvalidArgument when a topic is below the minimum size (the message
// names the topic, its prompts and tokens and the minimum) or the options are out of range;
// Unsupported when the model has no MoE layer; the forward pass's errors (naming the topic and
// prompt); Cancelled when *cancel turns true (checked between chunks).
Result<ProbeResult> runTopicProbe(const LoadedModel& model, const TopicSet& set,
                                  const ProbeOptions& options = {},
                                  const ProbeProgressFn& progress = {},
                                  const std::atomic<bool>* cancel = nullptr);

} // namespace coli::probe
