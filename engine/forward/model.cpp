#include "forward/model.h"

#include "convert/container_weights.h"
#include "convert/manifest.h"
#include "forward/kv_access.h"
#include "forward/model_impl.h"
#include "io/safetensors.h"
#include "mirror/mirror_load.h"
#include "tiers/expert_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace coli {

namespace {

int resolveThreads(int requested) {
    if (requested > 0) return requested;
#ifdef _OPENMP
    return std::max(1, omp_get_max_threads());
#else
    return 1;
#endif
}

bool anyQuantisation(const WeightQuantisation& q) {
    return q.experts || q.dense || q.embed || q.lmHead;
}

// MLA's kv_b_proj is read per head in f32 (weights.h LayerWeights::kvB): one stored quantised
// (a container, --quantise) is widened here, so both give the same bits.
void widenKvB(ModelWeights& w) {
    for (LayerWeights& L : w.layers) {
        Matrix& m = L.kvB;
        if (!m.quantised()) continue;
        std::vector<float> f(size_t(m.rows) * size_t(m.cols));
        quant::dequantiseRows(m.qfmt, m.q.data(), m.rows, m.cols, f.data());
        m.data = std::move(f);
        WeightBytes().swap(m.q);
    }
}

} // namespace

// ---- ModelImpl ----

float ModelImpl::attentionScale() const {
    // GraniteMoE: attention_multiplier is the softmax scale; others: 1/sqrt(head_dim).
    if (cfg.attentionMultiplier > 0) return cfg.attentionMultiplier;
    if (cfg.isMla()) {
        // DeepseekV3Attention: qk_head_dim^-0.5, times get_mscale(factor, mscale_all_dim)^2 under
        // yarn (in Python floats, then used as an f32 scale).
        double scale = 1.0 / std::sqrt(double(cfg.mla.qkHeadDim()));
        const RopeScaling& y = cfg.ropeScaling;
        if (y.type == "yarn" && y.mscaleAllDim != 0.0f) {
            const double m = yarnMscale(y.factor, y.mscaleAllDim);
            scale = scale * m * m;
        }
        return static_cast<float>(scale);
    }
    return 1.0f / std::sqrt(static_cast<float>(cfg.headDim));
}

struct Model::Impl : ModelImpl {
    std::vector<std::string> warnings;
};

// ---- Model ----

Model::Model() : m_impl(std::make_unique<Impl>()) {}
Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::load(const std::string& dir, const ModelLoadOptions& opt,
                                           const ProgressFn& progress,
                                           const std::atomic<bool>* cancel) {
    auto report = [&](const char* stage, double f) {
        if (progress) progress(LoadProgress{stage, f});
    };
    auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
    report("config", 0.0);
    Result<ModelConfig> cfg = loadConfig(dir);
    if (!cfg) return cfg.status();
    Result<Rope> rope = Rope::create(*cfg);
    if (!rope) return rope.status();
    if (cancelled()) return Status(ErrorCode::Cancelled, dir + ": loading cancelled");

    std::unique_ptr<Model> model(new Model());
    Impl& m = *model->m_impl;
    m.cfg = std::move(cfg.value());
    m.rope = std::move(rope.value());
    auto weightsProgress = [&](double f) { report("weights", 0.01 + 0.98 * f); };
    const bool stream = opt.tiers.stream;
    std::unique_ptr<aio::IoPool> pool;
    std::unique_ptr<tiers::ExpertSource> source;
    if (const auto& w = opt.tiers.diskWeights) {
        if (std::string e = mirror::checkDiskWeights(w->first, w->second); !e.empty())
            return Status(ErrorCode::InvalidArgument, "disk weights: " + e);
    }
    tiers::MirrorSetup mirrorSetup;
    if (!opt.tiers.mirrorDir.empty() && !stream) {
        m.warnings.push_back("mirror " + opt.tiers.mirrorDir +
                             ": not used: every expert is read at load (resident experts)");
    } else if (!opt.tiers.mirrorDir.empty()) {
        mirror::MirrorLoadOptions mo;
        mo.dir = opt.tiers.mirrorDir;
        mo.weights = opt.tiers.diskWeights;
        mirror::PreparedMirror pm = mirror::prepareMirror(dir, mo);
        m.warnings.insert(m.warnings.end(), pm.warnings.begin(), pm.warnings.end());
        mirrorSetup = std::move(pm.setup);
    }
    if (stream) {
        aio::IoOptions io;
        io.backend = opt.tiers.ioBackend;
        io.queueDepth = opt.tiers.ioQueueDepth;
        io.directIo = opt.tiers.directIo;
        Result<std::unique_ptr<aio::IoPool>> p = aio::IoPool::create(io);
        if (!p) return p.status();
        pool = std::move(p.value());
    }
    if (convert::isContainerDir(dir)) {
        // A container is quantised already; quantising again would change its bytes.
        if (anyQuantisation(opt.quantisation))
            return Status(ErrorCode::InvalidArgument,
                          dir + " is a colibri container, quantised when it was converted: "
                                "in-memory quantisation (ModelLoadOptions::quantisation, "
                                "--quantise) applies only to Hugging Face checkpoints");
        Result<convert::Container> box = convert::openContainer(dir);
        if (!box) return box.status();
        m.summary = convert::containerSummary(*box, m.cfg);
        report("weights", 0.01);
        Result<ModelWeights> w =
            convert::loadContainerWeights(*box, m.cfg, weightsProgress, cancel, !stream);
        if (!w) return w.status();
        m.w = std::move(w.value());
        if (stream) {
            Result<std::unique_ptr<tiers::ExpertSource>> src =
                tiers::openContainerSource(*box, m.cfg, *pool, mirrorSetup);
            if (!src) return src.status();
            source = std::move(src.value());
        }
    } else {
        Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(dir);
        if (!ckpt) return ckpt.status();
        m.summary = computeSummary(**ckpt, m.cfg);
        report("weights", 0.01);
        if (stream && opt.quantisation.experts)
            return Status(ErrorCode::InvalidArgument,
                          dir + ": streamed experts are read from the checkpoint as they are "
                                "stored (widened to f32): in-memory quantisation of the experts "
                                "cannot apply; convert the model (coli convert) to stream "
                                "quantised experts");
        Result<ModelWeights> w = loadWeights(**ckpt, m.cfg, weightsProgress, cancel, !stream);
        if (!w) return w.status();
        m.w = std::move(w.value());
        if (stream) {
            Result<std::unique_ptr<tiers::ExpertSource>> src =
                tiers::openCheckpointSource(**ckpt, m.cfg, *pool, mirrorSetup);
            if (!src) return src.status();
            source = std::move(src.value());
        }
        if (anyQuantisation(opt.quantisation)) {
            Status q = quantiseWeights(m.w, opt.quantisation);
            if (!q.isOk()) return Status(q.code(), dir + ": " + q.message());
        }
    }
    if (m.cfg.isMla()) widenKvB(m.w);
    if (stream) {
        if (const tiers::DiskRouter* r = source->router())
            m.warnings.insert(m.warnings.end(), r->warnings().begin(), r->warnings().end());
        tiers::CacheOptions co;
        co.budgetBytes = opt.tiers.ramBudgetBytes;
        co.prefetch = opt.tiers.prefetch;
        co.pinShare = opt.tiers.pinShare;
        Result<std::unique_ptr<tiers::ExpertCache>> cache =
            tiers::ExpertCache::create(std::move(pool), std::move(source), m.cfg, co);
        if (!cache) return Status(cache.status().code(), dir + ": " + cache.status().message());
        m.cache = std::move(cache.value());
    }
    if (opt.tiers.gpu != "none") {
        if (opt.path != ForwardPath::Fast) {
            m.gpuNote = "no GPU tier: the Reference path computes on the CPU";
        } else {
            Result<std::unique_ptr<VramExperts>> vram =
                VramExperts::open(opt.tiers, m.cfg, m.w, m.cache ? &m.cache->source() : nullptr,
                                  FastWorkspace::kChunk * m.cfg.topK, &m.gpuNote);
            if (!vram) return vram.status();
            m.vram = std::move(vram.value());
            if (m.vram && m.cache) {
                const GpuCounters c = m.vram->counters();
                // What the tier holds in system RAM (all of it on a device sharing the system's
                // memory, else the staging ring) counts in the RAM budget.
                m.cache->setVramCapacity(c.capacity, c.expertBytes, m.vram->ramBytes());
                if (m.vram->sharesSystemMemory())
                    m.gpuNote +=
                        fmt::format(" The device shares the system's memory: its {:.1f} "
                                    "MiB count in the RAM budget for experts.",
                                    double(c.capacity) * double(c.expertBytes) / 1048576.0);
            }
        }
    }
    m.path = opt.path;
    m.threads = resolveThreads(opt.threads);
    m.ws.allocate(m.cfg, m.threads);
    report("weights", 1.0);
    return model;
}

namespace {
std::string formatOf(const Matrix& m) {
    if (m.empty()) return "none";
    return m.quantised() ? quant::formatInfo(m.qfmt).name : "f32";
}
} // namespace

std::string Model::weightsDescription() const {
    const ModelImpl& m = *m_impl;
    const LayerWeights& L = m.w.layers.front();
    const Matrix& attention = m.cfg.isMla() ? L.kvA : L.q;
    std::string experts = "streamed";
    for (const auto& layer : m.w.experts)
        if (!layer.empty() && !layer.front().gate.empty()) {
            experts = formatOf(layer.front().gate);
            break;
        }
    const Matrix* mlp = nullptr;
    for (const LayerWeights& l : m.w.layers)
        if (!l.dense.gate.empty() || !l.shared.gate.empty()) {
            mlp = l.dense.gate.empty() ? &l.shared.gate : &l.dense.gate;
            break;
        }
    return m.summary.storage + "; embed " + formatOf(m.w.embed) + ", attention " +
           formatOf(attention) + ", mlp " + (mlp ? formatOf(*mlp) : "none") + ", experts " +
           experts + ", lm_head " + formatOf(m.w.outputMatrix()) + "; " +
           (m.path == ForwardPath::Fast ? "fast" : "reference");
}

const ModelConfig& Model::config() const {
    return m_impl->cfg;
}
const std::vector<std::string>& Model::warnings() const {
    return m_impl->warnings;
}
DecodeBytes Model::decodeBytes() const {
    return decodeBytesOf(*m_impl);
}
Result<placement::MemoryBandwidth> Model::residentWeightReadBandwidth(int repetitions) const {
    return residentWeightReadBandwidthOf(*m_impl, repetitions);
}
ModelSummary Model::summary() const {
    return m_impl->summary;
}
void Model::setPath(ForwardPath p) {
    m_impl->path = p;
}
ForwardPath Model::path() const {
    return m_impl->path;
}
int Model::threads() const {
    return m_impl->threads;
}
tiers::ExpertCache* Model::expertCache() const {
    return m_impl->cache.get();
}
bool Model::gpuActive() const {
    return m_impl->vram != nullptr;
}
GpuCounters Model::gpuCounters() const {
    return m_impl->vram ? m_impl->vram->counters() : GpuCounters{};
}
std::string Model::gpuNote() const {
    return m_impl->gpuNote;
}

std::vector<tiers::ExpertId> Model::setVramPins(const std::vector<tiers::ExpertId>& hottestFirst) {
    if (!m_impl->vram) return {};
    return m_impl->vram->setPins(hottestFirst, m_impl->cache ? nullptr : &m_impl->w);
}

std::vector<tiers::ExpertId> Model::vramPins() const {
    return m_impl->vram ? m_impl->vram->pins() : std::vector<tiers::ExpertId>{};
}

std::string Model::gpuDevice() const {
    return m_impl->vram ? m_impl->vram->deviceName() : std::string();
}

Status Model::setVramBudget(uint64_t bytes) {
    ModelImpl& m = *m_impl;
    if (!m.vram)
        return {ErrorCode::Unsupported, m.gpuNote.empty() ? "no GPU tier (--gpu none)" : m.gpuNote};
    Result<std::vector<tiers::ExpertId>> left = m.vram->setBudget(bytes);
    if (!left) return left.status();
    if (m.cache) {
        for (const tiers::ExpertId& id : *left)
            m.cache->markVram({-1, -1}, id);
        const GpuCounters c = m.vram->counters();
        m.cache->setVramCapacity(c.capacity, c.expertBytes, m.vram->ramBytes());
    }
    return {};
}

uint64_t Model::vramBudget() const {
    if (!m_impl->vram) return 0;
    const GpuCounters c = m_impl->vram->counters();
    return uint64_t(c.capacity) * c.expertBytes;
}

int Model::vramPinCapacity() const {
    return m_impl->vram ? m_impl->vram->pinCapacity() : 0;
}

void Model::setThreads(int n) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    m_impl->threads = resolveThreads(n);
    if (m_impl->threads > m_impl->ws.scoreThreads)
        m_impl->ws.allocate(m_impl->cfg, m_impl->threads);
}

Status Model::forward(std::span<const int32_t> tokens, KVCache& kv, std::vector<float>& logits,
                      bool allLogits, RoutingTrace* routing, ForwardTimes* times) const {
    const ModelConfig& c = m_impl->cfg;
    if (tokens.empty()) return {ErrorCode::InvalidArgument, "forward: no tokens given"};
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < 0 || tokens[i] >= c.vocabSize)
            return {ErrorCode::InvalidArgument,
                    "forward: token id " + std::to_string(tokens[i]) + " at index " +
                        std::to_string(i) + " outside [0, " + std::to_string(c.vocabSize) + ")"};
    }
    const int64_t end = int64_t(kv.size()) + int64_t(tokens.size());
    if (end > c.maxPositions)
        return {ErrorCode::InvalidArgument,
                "forward: context length exceeded: " + std::to_string(end) +
                    " positions > max_position_embeddings " + std::to_string(c.maxPositions)};
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    const int commitAhead = tokens.size() == 1 ? KVCacheAccess::kDecodeCommitAhead : 0;
    if (!KVCacheAccess::reserve(kv, c.nLayers, kvShape(c), int(end), c.maxPositions, commitAhead))
        return {ErrorCode::InvalidArgument,
                "forward: the KV cache holds tokens of a model with other dimensions"};
    m_impl->ws.reserveScores(int(end), c.maxPositions);
    if (routing) {
        routing->nTokens = int(tokens.size());
        routing->topK = c.topK;
        routing->moeLayers.clear();
        for (int l = 0; l < c.nLayers; ++l)
            if (m_impl->w.layers[l].sparse) routing->moeLayers.push_back(l);
        const size_t slots = tokens.size() * routing->moeLayers.size() * size_t(c.topK);
        routing->experts.assign(slots, 0);
        routing->weights.assign(slots, 0.0f);
    }
    const int start = kv.size();
    ForwardTimes spent;
    spent.phases = times ? times->phases : nullptr;
    const Status st = m_impl->path == ForwardPath::Reference
                          ? forwardReference(*m_impl, tokens, kv, logits, allLogits, routing, spent)
                          : forwardFast(*m_impl, tokens, kv, logits, allLogits, routing, spent);
    if (times) {
        times->attention += spent.attention;
        times->moe += spent.moe;
    }
    if (!st.isOk()) {
        if (m_impl->cache) m_impl->cache->abortLayer();
        kv.truncate(start);
    }
    return st;
}

} // namespace coli
