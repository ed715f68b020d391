#pragma once
// A finished topic probe run in the app (docs/visualisation.md "Topic probe"): what the engine
// thread measured and computed (engine/probe/topic_probe.h, atlas/probe_atlas.h), as plain values
// handed to the GUI thread in a ProbeFinished event and from there to the storage thread.
// Thread-safety: plain values, immutable once shared.
#include "atlas/probe_atlas.h"
#include "storage/atlas_store.h"

#include <string>

namespace coli::app {

struct ProbeOutcome {
    std::string modelDir;      // the model folder the probe ran on
    std::string topicsFile;    // the topic set file
    storage::AtlasProbe probe; // the rows to store (id 0 until saved)
    atlas::ProbeAtlas figures; // per topic: specialists, agreement; overall purity
};

} // namespace coli::app
