#pragma once
// From the topic probe's counts (engine/probe/topic_probe.h) to what the Atlas draws and the
// probe's figures (docs/visualisation.md "Topic probe"), with the shared definitions of viz/:
// topic shares and specialists (viz/specialists.h), the affinity graph and its 3D embedding
// (viz/affinity.h, viz/embedding.h), leave-one-prompt-out agreement and 5-NN topic purity.
// Only the experts of MoE layers are placed (dense layers route nothing).
// Thread-safety: pure functions; concurrent calls are safe.
#include "core/status.h"
#include "probe/topic_probe.h"
#include "storage/atlas_store.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coli::atlas {

struct TopicFigures {
    std::string id, label;
    int prompts = 0;
    int64_t tokens = 0;
    int specialists = 0;  // experts whose dominant topic this is (specialists only)
    double agreement = 0; // leave-one-prompt-out agreement of those specialists (0: none)
    double purity = 0;    // 5-NN topic purity of those specialists (0: none or not measured)
};

struct ExpertPoint {
    int layer = 0, expert = 0;  // decoder layer, expert within it
    double x = 0, y = 0, z = 0; // embedded position, each in [-1, 1]
    int dominant = -1;          // dominant topic of a specialist; -1: a generalist
    bool specialist = false;
    std::vector<double> shares; // [topics] slots / (tokens_t x top_k)
};

struct ProbeAtlas {
    int nLayers = 0, nExperts = 0, topK = 0;
    std::vector<TopicFigures> topics;
    std::vector<ExpertPoint> experts; // MoE layers' experts by (layer, expert)
    int specialists = 0;
    double agreement = 0; // leave-one-prompt-out agreement over every specialist
    int64_t agreementCases = 0;
    // 5-NN topic purity of the specialists in the embedding; nullopt when it cannot be
    // measured (fewer than 6 specialists): purityNote says why.
    std::optional<double> purity;
    std::string purityNote;
};

// Labels, figures and positions of a probe run. Errors: those of viz (InvalidArgument for
// inconsistent counts; Numeric when the eigensolver does not converge), each prefixed with
// "topic probe: ".
Result<ProbeAtlas> analyseProbe(const probe::ProbeResult& r);

// The rows the usage database stores for this run (storage/atlas_store.h): topics, non-zero
// counts, co-activation pairs and positions. createdMs 0 (= now when saved).
storage::AtlasProbe toStoredProbe(const probe::ProbeResult& r, const ProbeAtlas& a);

} // namespace coli::atlas
