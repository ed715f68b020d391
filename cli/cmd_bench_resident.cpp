// coli bench decode --resident: the decode step against the memory roofline. B_tok (the bytes a
// step reads, Model::decodeBytes) over R (placement/memory_bandwidth.h, the loop of `coli bench
// kernels`' MemRead, measured in this process right before each run with the same threads) gives
// the fastest decode memory allows; tok/s x B_tok / R is the share of it reached. Prefill rows
// give tok/s and the time split for prompts of given lengths. With --gpu the rows repeat per VRAM
// budget, with the GPU columns (bench_gpu_columns.h). A benchmark: nothing is asserted about speed;
// every run must decode the same tokens.
#include "cmd_bench_resident.h"
#include "bench_gpu_columns.h"
#include "bench_phase_table.h"
#include "bench_stats.h"
#include "exit_codes.h"
#include "startup/omp_defaults.h"

#include "forward/model.h"
#include "forward/phase_times.h"
#include "placement/memory_bandwidth.h"
#include "tokenizer/tokenizer.h"

#include <fmt/core.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace coli::cli {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string minMax(const std::vector<double>& v, const char* f) {
    if (v.empty()) return "-";
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return fmt::format(fmt::runtime(std::string(f) + "-" + f), *lo, *hi);
}

int fail(const Status& s) {
    fmt::print(stderr, "coli: error: {}\n", s.message());
    return kExitModel;
}

struct DecodeRun {
    std::vector<int32_t> ids;
    double tokps = 0;
    ForwardTimes times; // decode steps only
    double seconds = 0;
    GpuCounters gpuDecode, gpuRun; // the VRAM tier's: decode steps; prompt and decode
};

// phases: when set, the decode steps' per-phase times are added to it.
Result<DecodeRun> decodeOnce(const Model& m, const std::vector<int32_t>& prompt, int tokens,
                             PhaseTimes* phases = nullptr) {
    KVCache kv;
    std::vector<float> logits;
    const GpuCounters g0 = m.gpuCounters();
    COLI_RETURN_IF_ERROR(m.forward(prompt, kv, logits));
    DecodeRun r;
    r.times.phases = phases;
    const GpuCounters g1 = m.gpuCounters();
    const auto t0 = Clock::now();
    for (int i = 0; i < tokens; ++i) {
        const int32_t next =
            int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        r.ids.push_back(next);
        COLI_RETURN_IF_ERROR(
            m.forward(std::span<const int32_t>(&next, 1), kv, logits, false, nullptr, &r.times));
    }
    r.seconds = since(t0);
    r.tokps = tokens / r.seconds;
    r.gpuDecode = gpuDelta(m.gpuCounters(), g1);
    r.gpuRun = gpuDelta(m.gpuCounters(), g0);
    return r;
}

// Exactly n prompt tokens: the text's tokens repeated (the first keeps its BOS).
std::vector<int32_t> promptOfLength(const Tokenizer& tok, const std::string& text, int n) {
    const std::vector<int32_t> first = tok.encode(text, true);
    const std::vector<int32_t> more = tok.encode(" " + text, false);
    std::vector<int32_t> ids = first;
    while (int(ids.size()) < n && !more.empty())
        ids.insert(ids.end(), more.begin(), more.end());
    ids.resize(size_t(std::min<int>(n, int(ids.size()))));
    return ids;
}

} // namespace

int runBenchResident(const BenchResidentOptions& o) {
#ifdef _OPENMP
    if (o.threads > 0) omp_set_num_threads(o.threads); // the bandwidth loop's team too
#endif
    auto tok = Tokenizer::fromFile(o.model + "/tokenizer.json");
    if (!tok) return fail(tok.status());
    // With --gpu: the device and the expert size the VRAM budgets count in, checked up front.
    std::optional<VramAxis> axis;
    if (o.gpu != "none") {
        Result<VramAxis> a = probeVramAxis(o.model, o.gpu, o.threads);
        if (!a) return fail(a.status());
        axis = *a;
    }
    std::vector<uint64_t> vramBytes;
    for (const std::string& v : o.vramBudgets) {
        Result<uint64_t> b = axis ? vramBudgetBytes(v, *axis) : Result<uint64_t>(uint64_t(0));
        if (!b) {
            fmt::print(stderr, "coli: error: {}\n", b.status().message());
            return kExitUsage;
        }
        vramBytes.push_back(*b);
    }
    const std::vector<int32_t> prompt = (*tok)->encode(o.prompt, true);
    if (prompt.empty()) return fail({ErrorCode::InvalidArgument, "the prompt gives no tokens"});
    std::vector<int32_t> refIds; // the first run's tokens: every run must decode them
    for (size_t v = 0; v < vramBytes.size(); ++v) {
        ModelLoadOptions lo;
        lo.threads = o.threads;
        lo.tiers.gpu = vramBytes[v] ? o.gpu : "none";
        lo.tiers.vramBudgetBytes = vramBytes[v];
        auto model = Model::load(o.model, lo);
        if (!model) return fail(model.status());
        const Model& m = **model;
        if (vramBytes[v] && !m.gpuActive())
            return fail({ErrorCode::Unsupported, "--gpu " + o.gpu + ": " + m.gpuNote()});
        const DecodeBytes bytes = m.decodeBytes();
        if (v == 0) {
            fmt::print("model:      {}\n", o.model);
            fmt::print("decode:     resident (every expert in RAM); {} greedy tokens after a "
                       "{}-token prompt; {} runs, each right after its memory bandwidth "
                       "measurement; threads {}\n",
                       o.tokens, prompt.size(), o.runs, m.threads());
            fmt::print("OpenMP:     {}\n", startup::ompWaitDescription());
            fmt::print("B_tok:      {:.1f} MB per token (weights as stored; KV {:.3f} MB per "
                       "cached position, not counted)\n",
                       double(bytes.weights) / 1e6, double(bytes.kvPerPosition) / 1e6);
            if (axis) fmt::print("gpu:        {}\n", describeVramAxis(*axis));
        }
        if (axis) {
            const GpuCounters g = m.gpuCounters();
            fmt::print("{:<11} {:.1f} MiB, {} of {} experts in VRAM after load\n",
                       "vram " + o.vramBudgets[v] + ":", double(vramBytes[v]) / 1048576.0,
                       g.resident, axis->totalExperts);
        }
        // Routed experts per decode step: top_k in every sparse layer.
        const ModelConfig& cfg = m.config();
        int sparse = 0;
        for (int l = 0; l < cfg.nLayers; ++l)
            sparse += cfg.sparseLayer[size_t(l)] ? 1 : 0;
        const double routedPerRun = double(o.tokens) * cfg.topK * sparse;
        // One untimed run: pages, caches and the OpenMP team warm.
        auto first = decodeOnce(m, prompt, o.tokens);
        if (!first) return fail(first.status());
        const std::string where = axis ? " (VRAM " + o.vramBudgets[v] + ")" : "";
        if (refIds.empty()) refIds = first->ids;
        if (first->ids != refIds)
            return fail({ErrorCode::Internal,
                         "the untimed run" + where + " decoded other tokens than the first run"});
        std::vector<double> tokps, bw, ratio, bwWeights, ratioWeights;
        PhaseTimes decodePhases; // the measured runs' decode steps (--phases)
        double weightMb = 0;     // the bytes Rw reads, MB
        fmt::print("{:>4} {:>9} {:>9} {:>8} {:>9} {:>8} {:>13} {:>13} {:>13}{}\n", "run", "tok/s",
                   "R GB/s", "ratio", "Rw GB/s", "ratio_w", "attn ms/tok", "moe ms/tok",
                   "other ms/tok", axis ? fmt::format(" {}", gpuColumnsHeader()) : std::string());
        for (int run = 0; run < o.runs; ++run) {
            placement::MemoryBandwidthOptions mo;
            mo.repetitions = 3;
            auto r = placement::measureMemoryReadBandwidth(mo);
            if (!r) return fail(r.status());
            // The same loop over the model's own weights: where the VM placed them (see
            // docs/performance.md, "Which memory").
            auto rw = m.residentWeightReadBandwidth(mo.repetitions);
            if (!rw) return fail(rw.status());
            auto d = decodeOnce(m, prompt, o.tokens, o.phases ? &decodePhases : nullptr);
            if (!d) return fail(d.status());
            if (d->ids != refIds)
                return fail({ErrorCode::Internal, "run " + std::to_string(run + 1) + where +
                                                      " decoded other tokens than the first run"});
            const double R = r->bytesPerSecond;
            tokps.push_back(d->tokps);
            bw.push_back(R / 1e9);
            ratio.push_back(d->tokps * double(bytes.weights) / R);
            const double Rw = rw->bytesPerSecond;
            weightMb = double(rw->bufferBytes) / 1e6;
            bwWeights.push_back(Rw / 1e9);
            ratioWeights.push_back(Rw > 0 ? d->tokps * double(bytes.weights) / Rw : 0.0);
            const double perTok = 1e3 / o.tokens;
            GpuRowFigures g;
            g.active = m.gpuActive();
            g.vramShare = routedPerRun > 0 ? double(d->gpuDecode.experts) / routedPerRun : 0;
            g.add(d->gpuDecode, d->gpuRun, o.tokens);
            fmt::print("{:>4} {:>9.2f} {:>9.2f} {:>8.3f} {:>9.2f} {:>8.3f} {:>13.2f} {:>13.2f} "
                       "{:>13.2f}{}\n",
                       run + 1, d->tokps, R / 1e9, ratio.back(), Rw / 1e9, ratioWeights.back(),
                       d->times.attention * perTok, d->times.moe * perTok,
                       (d->seconds - d->times.attention - d->times.moe) * perTok,
                       axis ? fmt::format(" {}", gpuColumns(g)) : std::string());
        }
        fmt::print("median: {:.2f} tok/s ({}), R {:.2f} GB/s ({}), tok/s x B_tok / R {:.3f} ({}); "
                   "roofline {:.2f} tok/s\n",
                   median(tokps), minMax(tokps, "{:.2f}"), median(bw), minMax(bw, "{:.2f}"),
                   median(ratio), minMax(ratio, "{:.3f}"),
                   median(bw) * 1e9 / double(bytes.weights));
        fmt::print("weights: Rw {:.2f} GB/s ({}) over the model's {:.1f} MB of weights in RAM, "
                   "tok/s x B_tok / Rw {:.3f} ({})\n",
                   median(bwWeights), minMax(bwWeights, "{:.2f}"), weightMb, median(ratioWeights),
                   minMax(ratioWeights, "{:.3f}"));
        if (o.phases)
            fmt::print("phases:     decode steps of the {} runs, ms per token (work: a thread's "
                       "share of the phase up to its barrier; wait: at the barrier)\n{}",
                       o.runs, phaseTable(decodePhases, double(o.runs) * o.tokens, "token"));
        for (int len : o.prefill) {
            const std::vector<int32_t> ids = promptOfLength(**tok, o.prompt, len);
            std::vector<double> rate, attn, moe;
            PhaseTimes prefillPhases; // the measured runs' (--phases)
            prefillPhases.prefill = true;
            for (int run = -1; run < o.runs; ++run) {
                KVCache kv;
                std::vector<float> logits;
                ForwardTimes t;
                if (run >= 0 && o.phases) t.phases = &prefillPhases;
                const auto t0 = Clock::now();
                const Status s = m.forward(ids, kv, logits, false, nullptr, &t);
                const double sec = since(t0);
                if (!s.isOk()) return fail(s);
                if (run < 0) continue; // warm-up
                rate.push_back(double(ids.size()) / sec);
                attn.push_back(t.attention / sec);
                moe.push_back(t.moe / sec);
            }
            fmt::print("prefill {:>5} tokens: {:.2f} tok/s ({}); attention {:.0f} %, MoE {:.0f} "
                       "%, other {:.0f} % of the time (medians)\n",
                       ids.size(), median(rate), minMax(rate, "{:.2f}"), 100 * median(attn),
                       100 * median(moe), 100 * (1 - median(attn) - median(moe)));
            if (o.phases && !prefillPhases.threads.empty())
                fmt::print("phases:     prefill of {} tokens, ms per prompt\n{}", ids.size(),
                           phaseTable(prefillPhases, double(o.runs), "prompt"));
        }
    }
    if (axis) fmt::print("{}\n", gpuColumnsLegend());
    return kExitOk;
}

} // namespace coli::cli
