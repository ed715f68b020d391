#include "gpu/self_test.h"

#include "gpu/cpu_expert.h"
#include "gpu/expert_runner.h"
#include "quant/matmul.h"
#include "quant/shared_math.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

namespace coli::gpu {

namespace {

uint32_t bitsOf(float f) {
    return std::bit_cast<uint32_t>(f);
}

std::string hex(const uint8_t* p, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i)
        s += fmt::format("{:02x}", p[i]);
    return s;
}

// The cache key: everything that can change the device's arithmetic.
nlohmann::json cacheKey(const DeviceInfo& d) {
    return {{"device_uuid", hex(d.deviceUuid.data(), 16)},
            {"driver_id", d.driverId},
            {"driver_version", d.driverVersion},
            {"driver_info", d.driverName + " " + d.driverInfo},
            {"pipeline_cache_uuid", hex(d.pipelineCacheUuid.data(), 16)},
            {"shader_hash", fmt::format("{:016x}", shaderHash())}};
}

// Fills a quantised matrix with one of the extreme kinds: 0 Gaussian through the quantiser,
// 1 random bytes (every integer incl. -128 / -8), 2 all extreme integers, 3 scales 2^k over a
// wide range (mixed exponents), 4 huge scales (overflow: flagged), 5 tiny scales (subnormal
// products: flagged).
std::vector<uint8_t> fillMatrix(quant::WeightFormat f, int rows, int cols, int kind,
                                std::mt19937& rng) {
    std::vector<uint8_t> w(size_t(rows) * quant::rowBytes(f, cols));
    std::normal_distribution<float> normal;
    if (kind == 0) {
        std::vector<float> src(size_t(rows) * size_t(cols));
        for (float& v : src)
            v = normal(rng);
        (void)quant::quantiseRows(f, src.data(), rows, cols, w.data());
        return w;
    }
    std::uniform_int_distribution<int> byte(0, 255), exp2(-60, 60);
    for (uint8_t& b : w)
        b = uint8_t(kind == 2 ? (byte(rng) & 1 ? 0x80 : 0x7f) : byte(rng));
    const quant::FormatInfo fi = quant::formatInfo(f);
    for (int r = 0; r < rows; ++r) {
        const quant::RowBlocks rb = quant::rowBlocks(f, w.data(), cols, r);
        for (int g = 0; g < cols / fi.groupSize; ++g) {
            float s = std::ldexp(1.0f + float(byte(rng)) / 256.0f, -7);
            if (kind == 3) s = std::ldexp(s, exp2(rng));
            if (kind == 4) s = 1e35f;  // products past FLT_MAX: inf
            if (kind == 5) s = 1e-37f; // times an activation scale: subnormal
            if (byte(rng) < 8) s = -s;
            std::memcpy(const_cast<uint8_t*>(rb.scale) + size_t(g) * rb.stride, &s, 4);
        }
    }
    return w;
}

void fillInput(int cols, int group, int kind, std::mt19937& rng, std::vector<int8_t>* q,
               std::vector<float>* s) {
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<size_t>(cols));
    for (float& v : x)
        v = kind == 2 ? (normal(rng) > 0 ? 1.0f : -1.0f) : normal(rng);
    q->resize(size_t(cols));
    s->resize(size_t(cols / group));
    (void)quant::quantiseActivationRow(x.data(), cols, group, q->data(), s->data());
}

struct Tally {
    int64_t compared = 0, differing = 0, flagged = 0;
    void compare(const float* gpu, const float* cpu, size_t n) {
        for (size_t i = 0; i < n; ++i)
            differing += bitsOf(gpu[i]) != bitsOf(cpu[i]);
        compared += int64_t(n);
    }
};

// Direct matrix products: every format the tier runs, six fills, four tokens.
Status matvecCases(GpuContext& ctx, std::mt19937& rng, Tally* t) {
    constexpr int rows = 48, cols = 256, tokens = 4;
    for (quant::WeightFormat f : {quant::WeightFormat::Q4_G64, quant::WeightFormat::Q8_G64,
                                  quant::WeightFormat::Q4_G32, quant::WeightFormat::Q8_G32_R8}) {
        const quant::FormatInfo fi = quant::formatInfo(f);
        for (int kind = 0; kind < 6; ++kind) {
            const std::vector<uint8_t> w = fillMatrix(f, rows, cols, kind, rng);
            std::vector<int8_t> xq;
            std::vector<float> xs;
            std::vector<int8_t> allQ;
            std::vector<float> allS;
            for (int k = 0; k < tokens; ++k) {
                fillInput(cols, fi.groupSize, kind, rng, &xq, &xs);
                allQ.insert(allQ.end(), xq.begin(), xq.end());
                allS.insert(allS.end(), xs.begin(), xs.end());
            }
            std::vector<float> cpu(size_t(rows) * tokens);
            const quant::QuantisedActivations qa{allQ.data(), allS.data(), tokens, cols,
                                                 fi.groupSize};
            COLI_RETURN_IF_ERROR(quant::quantMatmul(f, w.data(), rows, cols, qa, cpu.data(),
                                                    quant::KernelPath::Scalar));
            Result<GpuBuffer> W = ctx.allocate(w.size(), Memory::Device);
            Result<GpuBuffer> Q = ctx.allocate(allQ.size(), Memory::Host);
            Result<GpuBuffer> S = ctx.allocate(allS.size() * 4, Memory::Host);
            Result<GpuBuffer> Y = ctx.allocate(cpu.size() * 4, Memory::Host);
            Result<GpuBuffer> F = ctx.allocate(tokens * 4, Memory::Host);
            Result<GpuBuffer> J = ctx.allocate(tokens * 16, Memory::Host);
            for (auto* b : {&W, &Q, &S, &Y, &F, &J})
                if (!*b) return b->status();
            COLI_RETURN_IF_ERROR(ctx.upload(*W, 0, w.data(), w.size()));
            std::memcpy(Q->mapped, allQ.data(), allQ.size());
            std::memcpy(S->mapped, allS.data(), allS.size() * 4);
            std::memset(F->mapped, 0, tokens * 4);
            auto* jobs = static_cast<uint32_t*>(J->mapped);
            for (uint32_t k = 0; k < tokens; ++k) {
                jobs[k * 4] = jobs[k * 4 + 1] = jobs[k * 4 + 2] = 0;
                jobs[k * 4 + 3] = k;
            }
            ctx.begin();
            ctx.dispatch(Kernel::Matvec, {{&*W}, {&*Q}, {&*S}, {&*Y}, {&*F}, {&*J}},
                         {rows, cols, uint32_t(fi.groupSize), uint32_t(fi.bits),
                          uint32_t(fi.rowTile > 1), 0, 0, 0},
                         (rows + 15) / 16, tokens);
            Status run = ctx.submit();
            if (run) run = ctx.wait();
            const auto* gy = static_cast<const float*>(Y->mapped);
            const auto* fl = static_cast<const uint32_t*>(F->mapped);
            for (int k = 0; run && k < tokens; ++k) {
                if (fl[k]) {
                    ++t->flagged;
                    continue;
                }
                // Stored [job, rows]; the CPU's y is [token, rows] too.
                t->compare(gy + size_t(k) * rows, cpu.data() + size_t(k) * rows, rows);
            }
            for (auto* b : {&W, &Q, &S, &Y, &F, &J})
                ctx.release(**b);
            COLI_RETURN_IF_ERROR(run);
        }
    }
    return Status::ok();
}

// Whole experts (the runner's full sequence), int4-g64 and int8-g64-r8 formats, incl. a large gate.
Status expertCases(GpuContext& ctx, std::mt19937& rng, Tally* t) {
    for (int variant = 0; variant < 2; ++variant) {
        ExpertShape s;
        s.dModel = 128;
        s.ffn = 192;
        s.gateUp = s.down = variant ? quant::WeightFormat::Q8_G64_R8 : quant::WeightFormat::Q4_G64;
        constexpr int experts = 2, tokens = 3;
        Result<std::unique_ptr<ExpertRunner>> runner =
            ExpertRunner::create(ctx, s, experts, experts * tokens);
        if (!runner) return runner.status();
        std::vector<std::vector<uint8_t>> mats;
        for (int e = 0; e < experts; ++e) {
            mats.push_back(fillMatrix(s.gateUp, s.ffn, s.dModel, e ? 3 : 0, rng));
            mats.push_back(fillMatrix(s.gateUp, s.ffn, s.dModel, 0, rng));
            mats.push_back(fillMatrix(s.down, s.dModel, s.ffn, 0, rng));
            COLI_RETURN_IF_ERROR((*runner)->upload(e, mats[size_t(e) * 3].data(),
                                                   mats[size_t(e) * 3 + 1].data(),
                                                   mats[size_t(e) * 3 + 2].data()));
        }
        const int G = quant::formatInfo(s.gateUp).groupSize;
        std::vector<int8_t> allQ, q;
        std::vector<float> allS, sc;
        for (int k = 0; k < tokens; ++k) {
            fillInput(s.dModel, G, 0, rng, &q, &sc);
            allQ.insert(allQ.end(), q.begin(), q.end());
            allS.insert(allS.end(), sc.begin(), sc.end());
        }
        std::vector<GpuJob> jobs;
        for (int e = 0; e < experts; ++e)
            for (int k = 0; k < tokens; ++k)
                jobs.push_back({e, k});
        std::vector<float> y(jobs.size() * size_t(s.dModel)), cpu(size_t(s.dModel));
        std::vector<uint32_t> flags(jobs.size());
        COLI_RETURN_IF_ERROR((*runner)->submit(jobs, allQ.data(), allS.data(), tokens));
        COLI_RETURN_IF_ERROR((*runner)->wait(y.data(), flags.data()));
        for (size_t j = 0; j < jobs.size(); ++j) {
            const int e = jobs[j].slot, k = jobs[j].inputRow;
            if (flags[j]) {
                ++t->flagged;
                continue;
            }
            const Status c =
                cpuExpert(s, mats[size_t(e) * 3].data(), mats[size_t(e) * 3 + 1].data(),
                          mats[size_t(e) * 3 + 2].data(), allQ.data() + size_t(k) * s.dModel,
                          allS.data() + size_t(k) * (s.dModel / G), cpu.data());
            if (!c) {
                ++t->differing; // the CPU failed where the GPU did not flag: not the same function
                continue;
            }
            t->compare(y.data() + j * size_t(s.dModel), cpu.data(), size_t(s.dModel));
        }
    }
    return Status::ok();
}

// silu over a table of 4096 inputs spread over [-90, 90] and near 0, through the SwiGLU kernel
// with up = 1 (x * 1 is exact, so the output is silu's bits).
Status siluCases(GpuContext& ctx, Tally* t) {
    constexpr int n = 4096;
    std::vector<float> x(n), one(n, 1.0f), cpu(n);
    for (int i = 0; i < n; ++i) {
        const float a = std::ldexp(1.0f + float(i % 97) / 97.0f, (i % 37) - 30);
        x[size_t(i)] = (i & 1 ? -a : a) * (i % 5 == 0 ? 64.0f : 1.0f);
        cpu[size_t(i)] = quant::siluShared(x[size_t(i)]);
    }
    Result<GpuBuffer> G = ctx.allocate(n * 4, Memory::Host), U = ctx.allocate(n * 4, Memory::Host),
                      F = ctx.allocate(n * 4, Memory::Host);
    for (auto* b : {&G, &U, &F})
        if (!*b) return b->status();
    std::memcpy(G->mapped, x.data(), n * 4);
    std::memcpy(U->mapped, one.data(), n * 4);
    std::memset(F->mapped, 0, n * 4);
    ctx.begin();
    ctx.dispatch(Kernel::Swiglu, {{&*G}, {&*U}, {&*F}}, {n, 1}, n / 64, 1);
    Status run = ctx.submit();
    if (run) run = ctx.wait();
    if (run) {
        const auto* gy = static_cast<const float*>(G->mapped);
        const auto* fl = static_cast<const uint32_t*>(F->mapped);
        for (int i = 0; i < n; ++i) {
            if (fl[i]) {
                ++t->flagged;
                continue;
            }
            t->compare(gy + i, cpu.data() + i, 1);
        }
    }
    for (auto* b : {&G, &U, &F})
        ctx.release(**b);
    return run;
}

} // namespace

std::string defaultSelfTestCache() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    const std::string base = xdg && *xdg ? xdg : std::string(home ? home : ".") + "/.cache";
    return base + "/colibri/gpu-selftest.json";
}

Result<SelfTestResult> runSelfTest(GpuContext& ctx, const SelfTestOptions& options) {
    const DeviceInfo& d = ctx.device();
    const nlohmann::json key = cacheKey(d);
    nlohmann::json cache = nlohmann::json::object();
    if (!options.cachePath.empty()) {
        std::ifstream in(options.cachePath);
        if (in) cache = nlohmann::json::parse(in, nullptr, false);
        if (!cache.is_object()) cache = nlohmann::json::object();
    }
    const std::string id = key.dump();
    if (cache.contains(id) && cache[id].is_object()) {
        const nlohmann::json& v = cache[id];
        SelfTestResult r;
        r.passed = v.value("passed", false);
        r.cached = true;
        r.message = v.value("message", std::string()) + " (cached)";
        return r;
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::mt19937 rng(20261201);
    Tally t;
    COLI_RETURN_IF_ERROR(matvecCases(ctx, rng, &t));
    COLI_RETURN_IF_ERROR(expertCases(ctx, rng, &t));
    COLI_RETURN_IF_ERROR(siluCases(ctx, &t));
    SelfTestResult r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.compared = t.compared;
    r.differing = t.differing;
    r.flagged = t.flagged;
    r.passed = t.differing == 0 && t.compared > 0;
    r.message = r.passed ? fmt::format("{}: GPU self-test passed ({} values bit-identical to the "
                                       "CPU, {} flagged, {:.2f} s)",
                                       d.name, t.compared, t.flagged, r.seconds)
                         : fmt::format("{}: GPU self-test failed ({} of {} values differ from the "
                                       "CPU); the GPU tier is off, experts run on the CPU",
                                       d.name, t.differing, t.compared);
    if (!options.cachePath.empty()) {
        cache[id] = {{"passed", r.passed}, {"message", r.message}};
        std::error_code ec;
        std::filesystem::create_directories(std::filesystem::path(options.cachePath).parent_path(),
                                            ec);
        const std::string tmp = options.cachePath + ".tmp";
        std::ofstream out(tmp);
        out << cache.dump(1) << "\n";
        out.close();
        if (out) std::filesystem::rename(tmp, options.cachePath, ec);
    }
    return r;
}

} // namespace coli::gpu
