#pragma once
// ModelWeights from a colibri container (docs/container.md, "Loading"), without dequantising:
// quantised tensors and expert parts go to Matrix::q / Matrix::qfmt byte for byte (the container
// stores U8 [rows, rowBytes] in quant/formats.h's layout), bf16 tensors are widened to f32
// (exact), f32 ones copied. Each routed expert is ONE positional read of its blob
// [offset, offset + length), split into gate / up / down by the manifest's part offsets.
// The tensors needed come from model/weight_plan.h, the list the checkpoint reader uses too.
// Thread-safety: pure apart from reading the container's files; the Container is not modified.
#include "convert/manifest.h"
#include "core/status.h"
#include "model/config.h"
#include "model/weights.h"

#include <atomic>
#include <string>

namespace coli::convert {

// Checks, before any data is read, that the container fits `cfg`: its manifest lists at least
// half the parameters the config needs (else Malformed naming config.json and its sizes, like
// checkPlausibleSizes for checkpoints); every tensor the config needs is listed (NotFound: the
// count and the first 20 names); each has the shape the config gives, a format its rank and
// columns allow (vectors f32 / bf16; a quantised matrix's cols a multiple of its group) and the
// length its format and shape give; every MoE layer has exactly n_experts blobs with gate / up
// [expert_ffn, d_model] and down [d_model, expert_ffn], and there is no blob the config does not
// have. Malformed messages name <dir>/colibri.json, the tensor or (layer, expert) and its shard.
Status checkContainerFits(const Container& c, const ModelConfig& cfg);

// checkContainerFits, then reads every needed tensor (one read per tensor, one per expert blob).
// progress: fraction of the bytes to read, after each tensor / blob. Errors: those of
// checkContainerFits; Io (a shard that cannot be opened or read: the message names the shard and
// the tensor); Cancelled when *cancel turns true (checked between tensors).
// routedExperts false: the expert blobs are checked (checkContainerFits) but not read; the
// experts' matrices stay empty (the expert tiers stream them, tiers/).
Result<ModelWeights> loadContainerWeights(const Container& c, const ModelConfig& cfg,
                                          const WeightProgressFn& progress = {},
                                          const std::atomic<bool>* cancel = nullptr,
                                          bool routedExperts = true);

// Model::summary() for a container, from the manifest (no data read): parameters from the config's
// tensor list; dense bytes = stored bytes of the needed non-expert tensors; expert bytes = blob
// bytes (padding included: what a read moves); bytes per expert = expert bytes / blobs; storage
// "colibri container (int4-g64 experts, int8-g64 dense, ...)". All counts zero when the
// container's sizes are implausible for the config (loadContainerWeights then says why).
ModelSummary containerSummary(const Container& c, const ModelConfig& cfg);

} // namespace coli::convert
