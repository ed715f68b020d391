#pragma once
// The topic probe's results in the Colibri database (schema v3, docs/storage.md "Schema version
// 3"; the probe itself: engine/probe/topic_probe.h, docs/visualisation.md "Topic probe"): one
// probe run per row of atlas_probes with its topics, the routed slots per (layer, expert, topic),
// the sparse co-activation and the Atlas's 3D positions and labels.
//
// An AtlasStore is a view over an open Storage's connection (database.h), like SessionStore: it
// holds a reference, no handle of its own, and must not outlive the Storage.
// Thread-safety: used only on the thread that opened the Storage (docs/design.md rule 6);
// everything it returns is a plain value that may cross threads.
// Failure policy: every message names the database file and what was being done; a save is ONE
// transaction (all or nothing). Errors common to all functions: Io (locked by another
// connection: storage::isBusy; read-only; disk full), Malformed (a damaged file).
#include "core/status.h"
#include "storage/database.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coli::storage {

struct AtlasTopic {
    std::string name;  // the topic's id in its set ("kjv_en")
    std::string label; // for people ("King James Bible")
    int prompts = 0;
    int64_t tokens = 0;
};

// Routed slots of one expert in one topic (rows with 0 slots need not be given).
struct AtlasCount {
    int layer = 0, expert = 0; // decoder layer index, expert within the layer
    int topic = 0;             // index into AtlasProbe::topics
    int64_t routedSlots = 0;   // the slots column
};

// Two experts routed for the same token (engine/probe/topic_probe.h); (layerA, expertA) <
// (layerB, expertB).
struct AtlasPair {
    int layerA = 0, expertA = 0, layerB = 0, expertB = 0;
    int64_t count = 0; // tokens, > 0
};

// An expert's place in the Atlas and its label.
struct AtlasPosition {
    int layer = 0, expert = 0;
    double x = 0, y = 0, z = 0;
    std::optional<int> dominantTopic; // nullopt: a generalist
    bool specialist = false;
};

struct AtlasProbe {
    int64_t id = 0;             // set by saveProbe / read back; ignored when saving
    std::string topicSet;       // the topic set's name
    std::string topicSetSha256; // of the topic set file
    int64_t createdMs = 0;      // Unix milliseconds; 0 when saving = now
    int nLayers = 0, nExperts = 0, topK = 0;
    std::vector<AtlasTopic> topics;       // in topic index order
    std::vector<AtlasCount> counts;       // sorted by (layer, expert, topic) when read
    std::vector<AtlasPair> coactivation;  // sorted by (layerA, expertA, layerB, expertB)
    std::vector<AtlasPosition> positions; // sorted by (layer, expert)
};

class AtlasStore {
public:
    explicit AtlasStore(Storage& storage) : m_db(storage) {}

    // Saves one probe run of `model` (a models row id) in one transaction; returns its id (> 0).
    // Errors: InvalidArgument (no topics; nLayers, nExperts or topK below 1; a layer, expert or
    // topic out of range; negative slots; a pair not in order or with count < 1; a position
    // that is not finite; a dominant topic out of range; an expert or pair given twice; each
    // message naming the row), NotFound (no such model), the common ones.
    Result<int64_t> saveProbe(int64_t model, const AtlasProbe& probe);
    // The model's newest probe (largest created, then largest id), with all its rows; nullopt
    // when the model has none. Errors: the common ones.
    Result<std::optional<AtlasProbe>> newestProbe(int64_t model);
    // How many probes the model has (0 for an unknown model). Errors: the common ones.
    Result<int64_t> probeCount(int64_t model);

private:
    Storage& m_db;
};

} // namespace coli::storage
