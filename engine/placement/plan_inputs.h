#pragma once
// What `coli plan` and the app feed placement_plan.h from a loaded model: its shape (the model's
// summary and its expert cache) and the files its weights are read from (for the disk bandwidth).
// Thread-safety: planShape reads a loaded model (safe from any thread: Model::summary and the
// cache's getters are); modelWeightFiles opens the files' headers on the calling thread.
#include "core/status.h"
#include "diskbench/io_bench.h"
#include "forward/model.h"
#include "placement/placement_plan.h"

#include <string>
#include <vector>

namespace coli::placement {

// The plan's shape of `model`: ModelSummary's dense bytes, bytes per expert, MoE layers and
// experts, the config's top-k, and the expert cache's slot bytes and working set.
// Errors: InvalidArgument when the model's experts do not stream (no expert cache: loaded with
// every expert resident, so there is nothing to place).
Result<PlanShape> planShape(const Model& model);

// The files the model's weights are read from: a colibri container's shards (colibri.json), else
// the checkpoint's safetensors shards (the index's weight_map, else every *.safetensors).
// Errors: those of convert::openContainer / Checkpoint::open and diskbench::statFiles, naming the
// file.
Result<std::vector<diskbench::ReadFile>> modelWeightFiles(const std::string& dir);

} // namespace coli::placement
