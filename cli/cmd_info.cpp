// coli info MODEL_DIR: what a checkpoint is and what it costs to run, from config.json and the
// safetensors headers (Model::summary()).
#include "commands.h"
#include "exit_codes.h"
#include "gpu_info.h"
#include "options.h"

#include "convert/manifest.h"
#include "forward/model.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace coli::cli {

int printContainerInfo(const std::string& dir, bool json); // cmd_convert.cpp

namespace {

// 1234567 -> "1,234,567"
std::string grouped(int64_t v) {
    std::string digits = std::to_string(v < 0 ? -v : v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return v < 0 ? "-" + out : out;
}

std::string humanCount(int64_t v) {
    if (v >= 1'000'000'000) return fmt::format("{:.2f}B", v / 1e9);
    if (v >= 1'000'000) return fmt::format("{:.2f}M", v / 1e6);
    if (v >= 1'000) return fmt::format("{:.2f}K", v / 1e3);
    return std::to_string(v);
}

std::string humanBytes(int64_t v) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = static_cast<double>(v);
    int u = 0;
    while (x >= 1024 && u < 4)
        x /= 1024, ++u;
    return u == 0 ? fmt::format("{} B", v) : fmt::format("{:.1f} {}", x, units[u]);
}

// The KV cache a token costs (f32, every layer: n_layers x heads x (kDim + vDim) x 4 bytes from
// kvShape, model/config.h) and, for MLA, what full per-head keys and values would cost instead
// (n_layers x n_heads x (qk_nope + qk_rope + v_head_dim) x 4).
struct KvCacheFacts {
    int64_t bytesPerToken = 0;
    int64_t fullBytesPerToken = 0; // MLA only (0 otherwise)
};

KvCacheFacts kvCacheFacts(const ModelConfig& c) {
    const KvShape s = kvShape(c);
    KvCacheFacts f;
    f.bytesPerToken = int64_t(c.nLayers) * s.heads * (s.kDim + s.vDim) * int64_t(sizeof(float));
    if (c.isMla())
        f.fullBytesPerToken = int64_t(c.nLayers) * c.nHeads * (c.mla.qkHeadDim() + c.mla.vHeadDim) *
                              int64_t(sizeof(float));
    return f;
}

} // namespace

// `coli info`'s "KV cache:" text, e.g. "864 bytes per token (f32, 3 layers; MLA latent 64 + rope
// key 8 per layer, 2.7x smaller than full K/V)".
std::string kvCacheText(const ModelConfig& c) {
    const KvCacheFacts f = kvCacheFacts(c);
    const KvShape s = kvShape(c);
    std::string what;
    if (c.isMla())
        what = fmt::format("MLA latent {} + rope key {} per layer, {:.1f}x smaller than full K/V",
                           c.mla.kvLoraRank, c.mla.qkRopeHeadDim,
                           double(f.fullBytesPerToken) / double(f.bytesPerToken));
    else
        what = fmt::format("K and V of {} KV heads x {} per layer", s.heads, s.kDim);
    return fmt::format("{} bytes per token (f32, {} layers; {})", grouped(f.bytesPerToken),
                       c.nLayers, what);
}

// `--json`'s kv_bytes_per_token and, for MLA, kv_full_bytes_per_token.
void addKvCacheJson(nlohmann::ordered_json& j, const ModelConfig& c) {
    const KvCacheFacts f = kvCacheFacts(c);
    j["kv_bytes_per_token"] = f.bytesPerToken;
    if (c.isMla()) j["kv_full_bytes_per_token"] = f.fullBytesPerToken;
}

namespace {

struct InfoOptions {
    ModelOptions model;
    bool json = false;
};

// A checkpoint's experts load as stored (f32 in RAM) unless quantised at load.
constexpr const char* kCheckpointGpu =
    "f32 experts stay on the CPU; load with --quantise experts=int4-g64 or convert the model "
    "(coli convert) to compute them in VRAM (--gpu)";

int runInfo(const InfoOptions& o) {
    if (convert::isContainerDir(o.model.dir)) return printContainerInfo(o.model.dir, o.json);
    ModelLoadOptions opt;
    opt.threads = o.model.threads;
    auto m = Model::load(o.model.dir, opt);
    if (!m) {
        printError(fmt::format("cannot load model {}: {}", o.model.dir, m.status().message()));
        return kExitModel;
    }
    const ModelConfig& c = m.value()->config();
    const ModelSummary s = m.value()->summary();
    if (o.json) {
        nlohmann::ordered_json j = {
            {"architecture", c.architecture},
            {"format", "huggingface"},
            {"family", familyModelType(c.family)},
            {"total_params", s.totalParams},
            {"active_params", s.activeParams},
            {"layers", c.nLayers},
            {"moe_layers", s.moeLayers},
            {"experts_per_layer", s.expertsPerLayer},
            {"top_k", c.topK},
            {"shared_expert_ffn", c.sharedFfn},
            {"bytes_per_expert", s.bytesPerExpert},
            {"dense_bytes", s.denseBytes},
            {"expert_bytes", s.expertBytes},
            {"context_length", c.maxPositions},
            {"storage", s.storage},
            {"vocab_size", c.vocabSize},
            {"hidden_size", c.dModel},
            {"heads", c.nHeads},
            {"kv_heads", c.nKvHeads},
            {"head_dim", c.headDim},
        };
        addKvCacheJson(j, c);
        addGpuInfoJson(j, kCheckpointGpu);
        fmt::print("{}\n", j.dump(2));
        return kExitOk;
    }
    fmt::print("model:            {}\n", o.model.dir);
    fmt::print("format:           Hugging Face checkpoint\n");
    fmt::print("architecture:     {}\n", c.architecture);
    fmt::print("family:           {}\n", familyModelType(c.family));
    fmt::print("parameters:       total {} ({}), active {} ({})\n", grouped(s.totalParams),
               humanCount(s.totalParams), grouped(s.activeParams), humanCount(s.activeParams));
    fmt::print("layers:           {} ({} MoE)\n", c.nLayers, s.moeLayers);
    fmt::print("experts:          {} per layer, top-{}{}\n", s.expertsPerLayer, c.topK,
               c.sharedFfn > 0 ? fmt::format(", shared expert (ffn {})", c.sharedFfn) : "");
    fmt::print("bytes per expert: {} ({})\n", grouped(s.bytesPerExpert),
               humanBytes(s.bytesPerExpert));
    fmt::print("dense bytes:      {} ({})\n", grouped(s.denseBytes), humanBytes(s.denseBytes));
    fmt::print("expert bytes:     {} ({})\n", grouped(s.expertBytes), humanBytes(s.expertBytes));
    fmt::print("context length:   {} tokens\n", c.maxPositions);
    fmt::print("KV cache:         {}\n", kvCacheText(c));
    fmt::print("storage:          {}\n", s.storage);
    fmt::print("vocab:            {}\n", c.vocabSize);
    if (c.isMla())
        fmt::print("hidden size:      {}, heads {} (MLA: q/k head dim {} + {} rope, v head dim "
                   "{}, latent {})\n",
                   c.dModel, c.nHeads, c.mla.qkNopeHeadDim, c.mla.qkRopeHeadDim, c.mla.vHeadDim,
                   c.mla.kvLoraRank);
    else
        fmt::print("hidden size:      {}, heads {} ({} KV), head dim {}\n", c.dModel, c.nHeads,
                   c.nKvHeads, c.headDim);
    printGpuInfo(kCheckpointGpu);
    return kExitOk;
}

} // namespace

Command addInfoCommand(CLI::App& root) {
    auto o = std::make_shared<InfoOptions>();
    CLI::App* cmd = root.add_subcommand(
        "info",
        "Describe a checkpoint: family, parameters (total/active), experts, bytes, context");
    cmd->footer(kExitCodesHelp);
    addModelOptions(*cmd, o->model);
    cmd->add_flag("--json", o->json, "Print the same facts as JSON");
    return {cmd, [o] { return runInfo(*o); }};
}

} // namespace coli::cli
