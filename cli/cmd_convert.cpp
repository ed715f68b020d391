// coli convert SRC_DIR DST_DIR: a Hugging Face checkpoint -> a colibri container (engine/convert,
// docs/container.md). Also `coli info` on a container (printContainerInfo): it describes the
// manifest (formats per class, shards, source hashes) without loading any weights.
#include "commands.h"
#include "exit_codes.h"
#include "gpu_info.h"
#include "options.h"
#include "signals.h"

#include "convert/converter.h"
#include "convert/manifest.h"
#include "model/config.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <unistd.h>

namespace coli::cli {

std::string kvCacheText(const ModelConfig& c);                        // cmd_info.cpp
void addKvCacheJson(nlohmann::ordered_json& j, const ModelConfig& c); // cmd_info.cpp

namespace {

// A write into the destination failed (disk full, not enough free space, I/O error). Not in
// exit_codes.h's shared list yet; documented in docs/cli.md.
constexpr int kExitWrite = 5;

struct ConvertCliOptions {
    std::string src, dst;
    std::string experts = "int4-g64";
    std::string dense = "int8";
    std::string embed = "int8";
    int shardMiB = 4096;
    bool force = false;
};

convert::StoredFormat expertFormat(const std::string& s) {
    using convert::StoredFormat;
    if (s == "int4-g32") return StoredFormat::Q4_G32;
    if (s == "int8" || s == "int8-g64") return StoredFormat::Q8_G64;
    if (s == "int8-g32") return StoredFormat::Q8_G32;
    return StoredFormat::Q4_G64;
}

convert::StoredFormat int8OrBf16(const std::string& s) {
    return s == "bf16" ? convert::StoredFormat::BF16 : convert::StoredFormat::Q8_G64;
}

std::string grouped(uint64_t v) {
    std::string d = std::to_string(v), out;
    for (size_t i = 0; i < d.size(); ++i) {
        if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
        out += d[i];
    }
    return out;
}

std::string mb(double bytes) {
    return fmt::format("{:.1f} MB", bytes / 1e6);
}

int runConvert(const ConvertCliOptions& o) {
    convert::ConvertOptions opt;
    opt.plan.experts = expertFormat(o.experts);
    opt.plan.dense = int8OrBf16(o.dense);
    opt.plan.embed = int8OrBf16(o.embed);
    opt.plan.maxShardBytes = uint64_t(o.shardMiB) << 20;
    opt.force = o.force;
    opt.converter = std::string("coli convert ") + COLI_VERSION;

    // Progress: one rewritten line on a terminal, at most 5 per second.
    const bool tty = isatty(STDERR_FILENO);
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    bool shown = false;
    convert::ConvertProgressFn progress;
    if (tty) {
        progress = [&](const convert::ConvertProgress& p) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(200)) return;
            last = now;
            shown = true;
            const double rate = p.seconds > 0 ? double(p.bytesDone) / p.seconds : 0;
            fmt::print(stderr, "\r{:<10} {}/{} tensors, {} / {}, {:.1f} MB/s   ", p.phase,
                       p.itemsDone, p.itemsTotal, mb(double(p.bytesDone)), mb(double(p.bytesTotal)),
                       rate / 1e6);
            std::fflush(stderr);
        };
    }
    installSigintHandler();
    convert::FailureSide side = convert::FailureSide::None;
    auto r = convert::convertCheckpoint(o.src, o.dst, opt, convert::posixFileSystem(), progress,
                                        &interruptFlag(), &side);
    if (shown) fmt::print(stderr, "\r{:<78}\r", "");
    if (!r) {
        const Status& s = r.status();
        if (s.code() == ErrorCode::Cancelled) {
            std::fflush(stdout);
            fmt::print(stderr, "coli: interrupted; run the same command again to resume\n");
            return kExitInterrupted;
        }
        printError(fmt::format("cannot convert {}: {}", o.src, s.message()));
        if (side == convert::FailureSide::Destination)
            return s.code() == ErrorCode::InvalidArgument ? kExitUsage : kExitWrite;
        return s.code() == ErrorCode::Internal ? kExitInternal : kExitModel;
    }
    const convert::ConvertReport& rep = r.value();
    fmt::print("converted:  {} -> {}\n", o.src, o.dst);
    fmt::print("format:     colibri container ({})\n", rep.manifest.describe());
    fmt::print("shards:     {} written, {} kept from an interrupted run\n", rep.shardsWritten,
               rep.shardsReused);
    fmt::print("experts:    {} blobs, 4096-aligned\n", rep.manifest.experts.size());
    fmt::print("size:       {} -> {} bytes (ratio {:.3f})\n", grouped(rep.sourceBytes),
               grouped(rep.outputBytes),
               rep.sourceBytes ? double(rep.outputBytes) / double(rep.sourceBytes) : 0.0);
    fmt::print("time:       {:.1f} s\n", rep.seconds);
    return kExitOk;
}

} // namespace

// `coli info` on a container: the facts its manifest and config.json give.
int printContainerInfo(const std::string& dir, bool json) {
    auto box = convert::openContainer(dir);
    if (!box) {
        printError(fmt::format("cannot load model {}: {}", dir, box.status().message()));
        return kExitModel;
    }
    auto cfg = loadConfig(dir);
    if (!cfg) {
        printError(fmt::format("cannot load model {}: {}", dir, cfg.status().message()));
        return kExitModel;
    }
    const convert::Container& c = box.value();
    const ModelConfig& m = cfg.value();
    uint64_t expertBytes = 0, denseBytes = 0;
    for (const auto& e : c.experts)
        expertBytes += e.length;
    for (const auto& t : c.tensors)
        denseBytes += t.length;
    int moeLayers = 0;
    for (bool s : m.sparseLayer)
        moeLayers += s ? 1 : 0;
    const uint64_t perExpert = c.experts.empty() ? 0 : expertBytes / c.experts.size();
    // What the VRAM tier can take: quantised experts of one format pair (docs/gpu.md).
    std::string gpuExperts = "no routed experts";
    if (!c.experts.empty()) {
        const convert::ExpertEntry& e = c.experts.front();
        bool alike = true, quantised = true;
        for (const convert::ExpertEntry& x : c.experts) {
            alike = alike && x.gate.format == e.gate.format && x.up.format == e.gate.format &&
                    x.down.format == e.down.format;
            quantised = quantised && convert::isQuantised(x.gate.format) &&
                        convert::isQuantised(x.down.format);
        }
        gpuExperts = !quantised ? "the experts are not quantised: they stay on the CPU"
                     : !alike   ? "the experts mix formats: they stay on the CPU"
                                : fmt::format("{} / {} experts can be computed in VRAM (--gpu)",
                                              convert::storedFormatName(e.gate.format),
                                              convert::storedFormatName(e.down.format));
    }
    const std::string format = "colibri container (" + c.describe() + ")";
    if (json) {
        nlohmann::ordered_json j = {{"format", "colibri"},
                                    {"quantisation", c.quantisation},
                                    {"architecture", m.architecture},
                                    {"source_model", c.modelId},
                                    {"layers", m.nLayers},
                                    {"moe_layers", moeLayers},
                                    {"experts_per_layer", m.nExperts},
                                    {"top_k", m.topK},
                                    {"bytes_per_expert", perExpert},
                                    {"dense_bytes", denseBytes},
                                    {"expert_bytes", expertBytes},
                                    {"context_length", m.maxPositions},
                                    {"storage", format},
                                    {"vocab_size", m.vocabSize},
                                    {"hidden_size", m.dModel}};
        addKvCacheJson(j, m);
        addGpuInfoJson(j, gpuExperts);
        fmt::print("{}\n", j.dump(2));
        return kExitOk;
    }
    fmt::print("model:            {}\n", dir);
    fmt::print("format:           {}\n", format);
    fmt::print("source:           {}\n", c.modelId);
    fmt::print("architecture:     {}\n", m.architecture);
    fmt::print("layers:           {} ({} MoE)\n", m.nLayers, moeLayers);
    fmt::print("experts:          {} per layer, top-{}\n", m.nExperts, m.topK);
    fmt::print("bytes per expert: {} (one 4096-aligned read)\n", grouped(perExpert));
    fmt::print("dense bytes:      {}\n", grouped(denseBytes));
    fmt::print("expert bytes:     {}\n", grouped(expertBytes));
    fmt::print("context length:   {} tokens\n", m.maxPositions);
    fmt::print("KV cache:         {}\n", kvCacheText(m));
    fmt::print("vocab:            {}\n", m.vocabSize);
    fmt::print("hidden size:      {}, heads {} ({} KV), head dim {}\n", m.dModel, m.nHeads,
               m.nKvHeads, m.headDim);
    printGpuInfo(gpuExperts);
    return kExitOk;
}

Command addConvertCommand(CLI::App& root) {
    auto o = std::make_shared<ConvertCliOptions>();
    CLI::App* cmd = root.add_subcommand(
        "convert", "Convert a Hugging Face checkpoint into a quantised colibri container");
    cmd->footer(std::string(kExitCodesHelp) + " convert: 5 = writing the destination failed "
                                              "(disk full, not enough free space).");
    cmd->add_option("SRC_DIR", o->src, "Hugging Face checkpoint directory")
        ->type_name("")
        ->required();
    cmd->add_option("DST_DIR", o->dst, "New (or empty) folder for the container")
        ->type_name("")
        ->required();
    cmd->add_option("--experts", o->experts, "Routed experts: int4-g64 (default), int4-g32, int8")
        ->type_name("FORMAT")
        ->check(CLI::IsMember({"int4-g64", "int4-g32", "int8", "int8-g64", "int8-g32"}));
    cmd->add_option("--dense", o->dense, "Attention, shared and dense MLP weights: int8, bf16")
        ->type_name("FORMAT")
        ->check(CLI::IsMember({"int8", "bf16"}));
    cmd->add_option("--embed", o->embed, "Embeddings and LM head: int8, bf16")
        ->type_name("FORMAT")
        ->check(CLI::IsMember({"int8", "bf16"}));
    cmd->add_option("--shard-size", o->shardMiB, "Largest shard in MiB (default 4096)")
        ->type_name("MIB")
        ->check(integerIn(1, 1 << 20));
    cmd->add_flag("--force", o->force, "Write into a non-empty destination folder");
    return {cmd, [o] { return runConvert(*o); }};
}

} // namespace coli::cli
