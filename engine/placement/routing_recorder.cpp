#include "placement/routing_recorder.h"

#include <algorithm>
#include <vector>

namespace coli::placement {

namespace {

int argmax(const std::vector<float>& x) {
    return int(std::max_element(x.begin(), x.end()) - x.begin());
}

} // namespace

Result<TraceRunSummary> traceRouting(const LoadedModel& lm, std::span<const int32_t> ids,
                                     int maxNewTokens, const std::atomic<bool>* cancel,
                                     const std::function<void(const RoutingTrace&)>& onPrompt,
                                     const std::function<void(const TracedToken&)>& onToken) {
    if (ids.empty()) return Status(ErrorCode::InvalidArgument, "the prompt has no tokens");
    const Model& model = lm.model();
    const ModelConfig& c = model.config();
    KVCache kv;
    std::vector<float> logits;
    RoutingTrace r;
    if (Status s = model.forward(ids, kv, logits, false, &r); !s.isOk())
        return Status(s.code(), "forward failed: " + s.message());
    TraceRunSummary out;
    out.promptTokens = int(ids.size());
    out.moeLayers = r.moeLayers;
    out.topK = r.topK;
    if (onPrompt) onPrompt(r);
    if (onToken)
        for (int t = 0; t < r.nTokens; ++t)
            onToken({t, ids[size_t(t)], false, &r, t});

    // Greedy continuation: each generated token is fed back, so it gets its own record.
    const auto& eos = lm.generationConfig().eosIds;
    out.stop = maxNewTokens > 0 ? "max tokens" : "none";
    while (out.generated < maxNewTokens) {
        if (cancel && cancel->load()) {
            out.stop = "cancelled";
            break;
        }
        if (kv.size() >= c.maxPositions) {
            out.stop = "context full";
            break;
        }
        const int32_t next = argmax(logits);
        const int pos = kv.size();
        if (Status s = model.forward({&next, 1}, kv, logits, false, &r); !s.isOk())
            return Status(s.code(),
                          "forward failed at position " + std::to_string(pos) + ": " + s.message());
        if (onToken) onToken({pos, next, true, &r, 0});
        ++out.generated;
        if (std::find(eos.begin(), eos.end(), next) != eos.end()) {
            out.stop = "eos";
            break;
        }
    }
    return out;
}

Result<cachesim::RoutingTraceFile> recordRoutingTrace(const LoadedModel& lm,
                                                      const std::string& prompt, int maxNewTokens,
                                                      const std::atomic<bool>* cancel,
                                                      const std::string& name) {
    const std::vector<int32_t> ids = lm.tokenizer().encode(prompt, /*addSpecial=*/true);
    if (ids.empty()) return Status(ErrorCode::InvalidArgument, name + ": the prompt has no tokens");
    cachesim::RoutingTraceFile f;
    f.name = name;
    f.nLayers = lm.model().config().nLayers;
    f.nExperts = lm.model().config().nExperts;
    auto run = traceRouting(
        lm, ids, maxNewTokens, cancel,
        [&](const RoutingTrace& r) {
            f.topK = r.topK;
            f.moeLayers = r.moeLayers;
        },
        [&](const TracedToken& t) {
            for (int i = 0; i < t.routing->nMoeLayers(); ++i) {
                auto e = t.routing->expertsAt(t.row, i);
                f.experts.insert(f.experts.end(), e.begin(), e.end());
            }
            f.generated.push_back(t.generated ? 1 : 0);
        });
    if (!run) return run.status();
    if (run->stop == "cancelled")
        return Status(ErrorCode::Cancelled, name + ": recording the routing was cancelled");
    return f;
}

const std::string& builtinPlanPrompt() {
    static const std::string prompt =
        "The morning train was late again, so Maria walked to the market instead. She bought "
        "bread, a bag of apples and fresh coffee, then sat by the river to read the news about "
        "the weather, the football match and a new museum opening in the old town.";
    return prompt;
}

} // namespace coli::placement
