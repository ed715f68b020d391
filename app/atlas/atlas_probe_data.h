#pragma once
// The topic probe's stored run (storage/atlas_store.h: AtlasProbe, the newest of a model, which
// the EngineController holds as atlasProbe()) as the Atlas's data: positions and labels as
// stored, shares = routed slots / (the topic's tokens x top-k), the same definition as
// `coli atlas --json`. Header-only.
// Thread-safety: a pure function.
#include "atlas/atlas_data.h"
#include "storage/atlas_store.h"
#include "viz/specialists.h"

#include <map>
#include <utility>
#include <vector>

namespace coli::atlas {

// One stored count as a routing share (viz::routingShare: slots / (the topic's tokens x top-k)).
// Requires c.topic to index p.topics.
inline float probeShare(const storage::AtlasProbe& p, const storage::AtlasCount& c) {
    return float(viz::routingShare(c.routedSlots, p.topics[size_t(c.topic)].tokens, p.topK));
}

inline AtlasData atlasFromProbe(const storage::AtlasProbe& p, std::string model) {
    AtlasData d;
    d.model = std::move(model);
    d.nLayers = p.nLayers;
    d.nExperts = p.nExperts;
    for (const storage::AtlasTopic& t : p.topics)
        d.topics.push_back(t.label.empty() ? t.name : t.label);
    const size_t nt = p.topics.size();
    std::map<std::pair<int, int>, std::vector<float>> shares;
    for (const storage::AtlasCount& c : p.counts) {
        if (c.topic < 0 || size_t(c.topic) >= nt) continue;
        auto& s = shares[{c.layer, c.expert}];
        s.resize(nt, 0.0f);
        s[size_t(c.topic)] = probeShare(p, c);
    }
    for (const storage::AtlasPosition& x : p.positions) {
        AtlasExpert e;
        e.layer = x.layer;
        e.expert = x.expert;
        e.x = float(x.x);
        e.y = float(x.y);
        e.z = float(x.z);
        e.topic = x.dominantTopic && *x.dominantTopic >= 0 && size_t(*x.dominantTopic) < nt
                      ? *x.dominantTopic
                      : -1;
        e.specialist = e.topic >= 0 && x.specialist;
        auto it = shares.find({x.layer, x.expert});
        e.shares = it != shares.end() ? it->second : std::vector<float>(nt, 0.0f);
        d.experts.push_back(std::move(e));
    }
    return d;
}

// The Brain's hover topics: for every (layer, expert) of a model of nLayers x nExperts (dense
// layers included, index layer * nExperts + expert), its topic profile: the shares above
// normalised to sum to 1 over the topics (all 0 for an expert the probe never saw routed).
// [n_layers * n_experts * n_topics]; empty when the probe does not fit that shape (another model's
// probe, or no topics).
inline std::vector<float> brainTopicProfiles(const storage::AtlasProbe& p, int nLayers,
                                             int nExperts) {
    const size_t nt = p.topics.size();
    if (nt == 0 || nLayers <= 0 || nExperts != p.nExperts || p.nLayers > nLayers) return {};
    std::vector<float> out(size_t(nLayers) * size_t(nExperts) * nt, 0.0f);
    for (const storage::AtlasCount& c : p.counts) {
        if (c.topic < 0 || size_t(c.topic) >= nt || c.layer < 0 || c.layer >= nLayers ||
            c.expert < 0 || c.expert >= nExperts)
            continue;
        out[(size_t(c.layer) * size_t(nExperts) + size_t(c.expert)) * nt + size_t(c.topic)] =
            probeShare(p, c);
    }
    for (size_t cell = 0; cell < size_t(nLayers) * size_t(nExperts); ++cell) {
        float* row = out.data() + cell * nt;
        double sum = 0;
        for (size_t t = 0; t < nt; ++t)
            sum += row[t];
        if (sum > 0)
            for (size_t t = 0; t < nt; ++t)
                row[t] = float(row[t] / sum);
    }
    return out;
}

} // namespace coli::atlas
