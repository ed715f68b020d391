// coli info MODEL_DIR: what a checkpoint is and what it costs to run, from config.json and the
// safetensors headers (Model::summary()).
#include "commands.h"
#include "exit_codes.h"
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

struct InfoOptions {
    ModelOptions model;
    bool json = false;
};

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
    fmt::print("storage:          {}\n", s.storage);
    fmt::print("vocab:            {}\n", c.vocabSize);
    fmt::print("hidden size:      {}, heads {} ({} KV), head dim {}\n", c.dModel, c.nHeads,
               c.nKvHeads, c.headDim);
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
