#include "probe/topic_probe.h"

#include "tiers/expert_cache.h"

#include <algorithm>
#include <unordered_map>

namespace coli::probe {

namespace {

// Pauses the expert cache's learning for the probe and restores the previous switch.
class LearningPause {
public:
    explicit LearningPause(tiers::ExpertCache* cache) : m_cache(cache) {
        if (m_cache) {
            m_was = m_cache->learning();
            m_cache->setLearning(false);
        }
    }
    ~LearningPause() {
        if (m_cache) m_cache->setLearning(m_was);
    }
    LearningPause(const LearningPause&) = delete;
    LearningPause& operator=(const LearningPause&) = delete;

private:
    tiers::ExpertCache* m_cache;
    bool m_was = true;
};

// Counting co-activation exactly: one entry per distinct pair seen (a < b, key a * n + b).
class PairCounter {
public:
    explicit PairCounter(int n) : m_n(uint64_t(n)) {}
    void add(int32_t x, int32_t y) {
        if (x == y) return;
        const uint64_t a = uint64_t(std::min(x, y)), b = uint64_t(std::max(x, y));
        ++m_counts[a * m_n + b];
    }
    // Each expert's `partners` strongest pairs (count descending, partner ascending), the union
    // of those lists, sorted by (a, b).
    std::vector<CoactivationCount> strongest(int partners) const {
        std::vector<CoactivationCount> all;
        all.reserve(m_counts.size());
        for (const auto& [key, count] : m_counts)
            all.push_back({int32_t(key / m_n), int32_t(key % m_n), count});
        std::sort(all.begin(), all.end(),
                  [](const CoactivationCount& p, const CoactivationCount& q) {
                      return p.a != q.a ? p.a < q.a : p.b < q.b;
                  });
        // Per expert, the indices into `all` of its pairs.
        std::vector<std::vector<size_t>> byExpert(m_n);
        for (size_t i = 0; i < all.size(); ++i) {
            byExpert[size_t(all[i].a)].push_back(i);
            byExpert[size_t(all[i].b)].push_back(i);
        }
        std::vector<char> keep(all.size(), 0);
        for (size_t e = 0; e < byExpert.size(); ++e) {
            std::vector<size_t>& list = byExpert[e];
            auto partner = [&](size_t i) { return size_t(all[i].a) == e ? all[i].b : all[i].a; };
            const size_t n = std::min(list.size(), size_t(std::max(partners, 0)));
            std::partial_sort(list.begin(), list.begin() + ptrdiff_t(n), list.end(),
                              [&](size_t i, size_t j) {
                                  if (all[i].count != all[j].count)
                                      return all[i].count > all[j].count;
                                  return partner(i) < partner(j);
                              });
            for (size_t k = 0; k < n; ++k)
                keep[list[k]] = 1;
        }
        std::vector<CoactivationCount> out;
        for (size_t i = 0; i < all.size(); ++i)
            if (keep[i]) out.push_back(all[i]);
        return out;
    }

private:
    uint64_t m_n;
    std::unordered_map<uint64_t, uint32_t> m_counts;
};

} // namespace

double ProbeResult::share(int topic, int layer, int expert) const {
    const int64_t tokens = topics[size_t(topic)].tokens;
    if (tokens <= 0 || topK <= 0) return 0.0;
    return double(slotsOf(topic, layer, expert)) / (double(tokens) * topK);
}

Result<ProbeResult> runTopicProbe(const LoadedModel& lm, const TopicSet& set, const ProbeOptions& o,
                                  const ProbeProgressFn& progress,
                                  const std::atomic<bool>* cancel) {
    const Model& model = lm.model();
    const ModelConfig& c = model.config();
    if (o.chunkTokens < 1 || o.windowTokens < 0 || o.partners < 0 || o.minPrompts < 0 ||
        o.minTokens < 0)
        return Result<ProbeResult>(ErrorCode::InvalidArgument,
                                   "topic probe: chunk, window, partner and minimum sizes must "
                                   "not be negative (chunk at least 1)");
    ProbeResult r;
    r.topicSetFile = set.file;
    r.topicSetName = set.name;
    r.topicSetSha256 = set.sha256;
    r.nLayers = c.nLayers;
    r.nExperts = c.nExperts;
    r.topK = c.topK;
    for (int l = 0; l < c.nLayers; ++l)
        if (l < int(c.sparseLayer.size()) && c.sparseLayer[size_t(l)]) r.moeLayers.push_back(l);
    if (r.moeLayers.empty() || c.nExperts < 1 || c.topK < 1)
        return Result<ProbeResult>(ErrorCode::Unsupported,
                                   "topic probe: the model has no MoE layers: nothing is routed");
    // What the model saw before each training document: its BOS token (generation_config.json,
    // else config.json), run as context in front of every window but not counted.
    std::vector<int32_t> prefix;
    if (const int32_t bos = lm.generationConfig().bosId; bos >= 0 && bos < c.vocabSize)
        prefix.push_back(bos);
    const int window =
        std::min(o.windowTokens > 0 ? o.windowTokens : c.maxPositions, c.maxPositions) -
        int(prefix.size());
    if (window < 1)
        return Result<ProbeResult>(ErrorCode::InvalidArgument,
                                   "topic probe: the window leaves no room for a prompt token");

    // Tokenize everything first: the minimum sizes are checked before any forward pass, and the
    // progress knows its total.
    std::vector<std::vector<std::vector<int32_t>>> ids(set.topics.size());
    for (size_t t = 0; t < set.topics.size(); ++t) {
        const Topic& topic = set.topics[t];
        TopicStats ts;
        ts.id = topic.id;
        ts.label = topic.label;
        ts.prompts = int(topic.prompts.size());
        for (const std::string& p : topic.prompts) {
            ids[t].push_back(lm.tokenizer().encode(p, /*addSpecial=*/false));
            ts.tokens += int64_t(ids[t].back().size());
        }
        if (ts.prompts < o.minPrompts || ts.tokens < o.minTokens)
            return Result<ProbeResult>(
                ErrorCode::InvalidArgument,
                set.file + ": topic \"" + topic.id + "\" has " + std::to_string(ts.prompts) +
                    " prompts and " + std::to_string(ts.tokens) +
                    " tokens with this model's tokenizer; the probe needs at least " +
                    std::to_string(o.minPrompts) + " prompts and " + std::to_string(o.minTokens) +
                    " tokens per topic, so that its shares are measured, not noise");
        r.tokens += ts.tokens;
        r.topics.push_back(std::move(ts));
    }

    const int n = r.nRouted();
    r.routedSlots.assign(r.topics.size() * size_t(n), 0);
    PairCounter pairs(n);
    LearningPause pause(model.expertCache());
    KVCache kv;
    std::vector<float> logits;
    RoutingTrace trace;
    ProbeProgress pg;
    pg.tokensTotal = r.tokens;
    if (progress) progress(pg);
    std::vector<int32_t> previous; // the previous MoE layer's experts of one token
    for (size_t t = 0; t < set.topics.size(); ++t) {
        pg.topic = int(t);
        int64_t* topicSlots = r.routedSlots.data() + t * size_t(n);
        for (size_t p = 0; p < ids[t].size(); ++p) {
            const std::vector<int32_t>& tokens = ids[t][p];
            PromptStats ps;
            ps.topic = int(t);
            ps.tokens = int64_t(tokens.size());
            ps.routedSlots.assign(size_t(n), 0);
            std::vector<int32_t> seq;
            for (size_t w = 0; w < tokens.size(); w += size_t(window)) {
                const size_t wEnd = std::min(tokens.size(), w + size_t(window));
                seq = prefix;
                seq.insert(seq.end(), tokens.begin() + ptrdiff_t(w),
                           tokens.begin() + ptrdiff_t(wEnd));
                kv.clear();
                ++r.topics[t].windows;
                for (size_t at = 0; at < seq.size(); at += size_t(o.chunkTokens)) {
                    if (cancel && cancel->load(std::memory_order_relaxed))
                        return Result<ProbeResult>(ErrorCode::Cancelled, "topic probe: cancelled");
                    const size_t len = std::min(seq.size() - at, size_t(o.chunkTokens));
                    if (Status s = model.forward({seq.data() + at, len}, kv, logits, false, &trace);
                        !s.isOk())
                        return Result<ProbeResult>(
                            s.code(), "topic probe: topic \"" + set.topics[t].id + "\", prompt " +
                                          std::to_string(p + 1) + ": " + s.message());
                    int64_t counted = 0;
                    for (int tok = 0; tok < trace.nTokens; ++tok) {
                        if (at + size_t(tok) < prefix.size()) continue; // the BOS context
                        ++counted;
                        previous.clear();
                        for (int i = 0; i < trace.nMoeLayers(); ++i) {
                            const int base = trace.moeLayers[size_t(i)] * r.nExperts;
                            const std::span<const int32_t> ex = trace.expertsAt(tok, i);
                            for (size_t a = 0; a < ex.size(); ++a) {
                                const int32_t id = base + ex[a];
                                ++topicSlots[id];
                                ++ps.routedSlots[size_t(id)];
                                for (size_t b = a + 1; b < ex.size(); ++b)
                                    pairs.add(id, base + ex[b]);
                                for (int32_t q : previous)
                                    pairs.add(q, id);
                            }
                            previous.clear();
                            for (int32_t e : ex)
                                previous.push_back(base + e);
                        }
                    }
                    pg.tokensDone += counted;
                    if (progress) progress(pg);
                }
            }
            r.prompts.push_back(std::move(ps));
        }
    }
    r.coactivation = pairs.strongest(o.partners);
    return r;
}

} // namespace coli::probe
