#include "atlas/probe_atlas.h"

#include "viz/affinity.h"
#include "viz/embedding.h"
#include "viz/specialists.h"

#include <unordered_map>

namespace coli::atlas {

namespace {

Status prefixed(const Status& s) {
    return {s.code(), "topic probe: " + s.message()};
}

} // namespace

Result<ProbeAtlas> analyseProbe(const probe::ProbeResult& r) {
    const int T = int(r.topics.size());
    const int E = r.nExperts;
    // The routed experts, compact: MoE layer ordinal * E + expert.
    const int m = int(r.moeLayers.size()) * E;
    std::vector<int> compactOfLayer(size_t(r.nLayers), -1);
    for (size_t i = 0; i < r.moeLayers.size(); ++i)
        compactOfLayer[size_t(r.moeLayers[i])] = int(i);
    auto compact = [&](int global) {
        const int layer = global / E;
        const int c = compactOfLayer[size_t(layer)];
        return c < 0 ? -1 : c * E + global % E;
    };

    viz::PromptRouting pr;
    pr.nExperts = m;
    pr.nTopics = T;
    pr.topK = r.topK;
    pr.routedSlots.reserve(r.prompts.size() * size_t(m));
    for (const probe::PromptStats& p : r.prompts) {
        pr.topic.push_back(p.topic);
        pr.tokens.push_back(p.tokens);
        for (int li : r.moeLayers)
            pr.routedSlots.insert(pr.routedSlots.end(), p.routedSlots.begin() + ptrdiff_t(li) * E,
                                  p.routedSlots.begin() + ptrdiff_t(li + 1) * E);
    }
    auto shares = viz::topicShares(pr);
    if (!shares) return prefixed(shares.status());
    auto labels = viz::labelExperts(*shares, m, T);
    if (!labels) return prefixed(labels.status());
    auto loo = viz::leaveOnePromptOut(pr);
    if (!loo) return prefixed(loo.status());

    viz::RoutingProfile profile;
    profile.nExperts = m;
    profile.nTopics = T;
    profile.shares = *shares;
    profile.routed.assign(size_t(m), 0);
    for (size_t t = 0; t < size_t(T); ++t)
        for (int li : r.moeLayers)
            for (int e = 0; e < E; ++e)
                profile.routed[size_t(compact(li * E + e))] +=
                    uint64_t(r.routedSlots[t * size_t(r.nRouted()) + size_t(li) * E + e]);
    for (const probe::CoactivationCount& c : r.coactivation) {
        const int a = compact(c.a), b = compact(c.b);
        if (a < 0 || b < 0) continue; // cannot happen: only routed experts pair up
        profile.coactivation.push_back({std::min(a, b), std::max(a, b), c.count});
    }
    auto graph = viz::buildAffinity(profile);
    if (!graph) return prefixed(graph.status());
    auto emb = viz::embed3d(*graph);
    if (!emb) return prefixed(emb.status());

    ProbeAtlas out;
    out.nLayers = r.nLayers;
    out.nExperts = E;
    out.topK = r.topK;
    out.agreement = loo->overall;
    out.agreementCases = loo->cases;
    std::vector<int> dominant(size_t(m), viz::kGeneralist);
    for (int i = 0; i < m; ++i) {
        const viz::ExpertLabel& l = (*labels)[size_t(i)];
        ExpertPoint p;
        p.layer = r.moeLayers[size_t(i / E)];
        p.expert = i % E;
        p.x = emb->xyz[size_t(i) * 3];
        p.y = emb->xyz[size_t(i) * 3 + 1];
        p.z = emb->xyz[size_t(i) * 3 + 2];
        p.dominant = l.dominant;
        p.specialist = l.specialist();
        p.shares.assign(shares->begin() + ptrdiff_t(i) * T, shares->begin() + ptrdiff_t(i + 1) * T);
        dominant[size_t(i)] = l.dominant;
        out.specialists += p.specialist;
        out.experts.push_back(std::move(p));
    }
    for (int t = 0; t < T; ++t) {
        TopicFigures f;
        f.id = r.topics[size_t(t)].id;
        f.label = r.topics[size_t(t)].label;
        f.prompts = r.topics[size_t(t)].prompts;
        f.tokens = r.topics[size_t(t)].tokens;
        f.specialists = loo->specialists[size_t(t)];
        f.agreement = loo->perTopic[size_t(t)];
        out.topics.push_back(std::move(f));
    }
    std::vector<int> leaning(size_t(m), viz::kGeneralist);
    for (int i = 0; i < m; ++i)
        leaning[size_t(i)] = (*labels)[size_t(i)].topTopic;
    auto purity = viz::neighbourhoodPurity(emb->xyz, dominant, leaning, T);
    if (purity) {
        out.purity = purity->overall;
        out.purityChance = purity->chance;
        out.purityAmongSpecialistsCap = purity->specialistsCap;
        for (int t = 0; t < T; ++t)
            out.topics[size_t(t)].purity = purity->perTopic[size_t(t)];
    } else {
        out.purityNote = purity.status().message();
    }
    if (auto among = viz::topicPurity(emb->xyz, dominant, T))
        out.purityAmongSpecialists = among->overall;
    return out;
}

storage::AtlasProbe toStoredProbe(const probe::ProbeResult& r, const ProbeAtlas& a) {
    storage::AtlasProbe p;
    p.topicSet = r.topicSetName;
    p.topicSetSha256 = r.topicSetSha256;
    p.nLayers = r.nLayers;
    p.nExperts = r.nExperts;
    p.topK = r.topK;
    for (const probe::TopicStats& t : r.topics)
        p.topics.push_back({t.id, t.label, t.prompts, t.tokens});
    for (int li : r.moeLayers)
        for (int e = 0; e < r.nExperts; ++e)
            for (int t = 0; t < int(r.topics.size()); ++t)
                if (const int64_t s = r.slotsOf(t, li, e); s > 0) p.counts.push_back({li, e, t, s});
    for (const probe::CoactivationCount& c : r.coactivation)
        p.coactivation.push_back(
            {c.a / r.nExperts, c.a % r.nExperts, c.b / r.nExperts, c.b % r.nExperts, c.count});
    for (const ExpertPoint& x : a.experts) {
        storage::AtlasPosition pos;
        pos.layer = x.layer;
        pos.expert = x.expert;
        pos.x = x.x;
        pos.y = x.y;
        pos.z = x.z;
        if (x.dominant >= 0) pos.dominantTopic = x.dominant;
        pos.specialist = x.specialist;
        p.positions.push_back(pos);
    }
    return p;
}

} // namespace coli::atlas
