#include "convert/container_weights.h"

#include "core/regular_file.h"
#include "io/dtype.h"
#include "io/file_io.h"
#include "model/weight_plan.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

namespace coli::convert {

namespace {

namespace fs = std::filesystem;

// Missing tensors are counted; the first kShownMissing are listed (as checkpoints do).
constexpr size_t kShownMissing = 20;

std::string manifestPath(const Container& c) {
    return (fs::path(c.dir) / kManifestName).string();
}

int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t x : shape)
        n *= x;
    return n;
}

// Format, group and length of one stored matrix or vector against the shape the config needs.
// `what` names the tensor and its shard for the message.
Status checkStored(const Container& c, const std::string& what, StoredFormat f,
                   const std::vector<int64_t>& shape, uint64_t length) {
    auto bad = [&](const std::string& why) {
        return Status(ErrorCode::Malformed, manifestPath(c) + ": " + what + ": " + why);
    };
    if (shape.size() == 1 && isQuantised(f))
        return bad(std::string("stored as ") + storedFormatName(f) +
                   "; a 1-D tensor must be f32 or bf16");
    const int64_t cols = shape.back(), rows = numel(shape) / (cols ? cols : 1);
    if (isQuantised(f) && cols % groupSize(f) != 0)
        return bad(std::to_string(cols) + " columns is not a multiple of " + storedFormatName(f) +
                   "'s group");
    const uint64_t want = storedBytes(f, rows, cols);
    if (length != want)
        return bad("length " + std::to_string(length) + ", but " + storedFormatName(f) + " " +
                   shapeString(shape) + " takes " + std::to_string(want) + " bytes");
    return {};
}

std::string tensorWhat(const TensorEntry& t) {
    return "tensor '" + t.name + "' (in " + t.file + ")";
}

std::string expertWhat(const ExpertEntry& e, const char* part = nullptr) {
    return "expert blob '" + e.tensor + "' (layer " + std::to_string(e.layer) + ", expert " +
           std::to_string(e.expert) + ", in " + e.file + ")" +
           (part ? std::string(" part '") + part + "'" : std::string());
}

// Elements the manifest's entries hold (what the container can describe at most).
double heldParams(const Container& c) {
    double held = 0;
    for (const TensorEntry& t : c.tensors)
        held += double(numel(t.shape));
    for (const ExpertEntry& e : c.experts)
        for (const ExpertPart* p : {&e.gate, &e.up, &e.down})
            held += double(numel(p->shape));
    return held;
}

Status checkPlausible(const Container& c, const ModelConfig& cfg) {
    const double need = expectedParamsLowerBound(cfg), held = heldParams(c);
    // As checkPlausibleSizes: within a factor of 2, the per-tensor checks name what is wrong.
    if (need <= 2 * held) return {};
    char buf[256];
    std::snprintf(buf, sizeof buf, "%.4g parameters, more than twice the %.4g %s lists", need, held,
                  manifestPath(c).c_str());
    return {ErrorCode::Malformed,
            (fs::path(c.dir) / "config.json").string() + ": the sizes (num_hidden_layers " +
                std::to_string(cfg.nLayers) + ", hidden_size " + std::to_string(cfg.dModel) +
                ", vocab_size " + std::to_string(cfg.vocabSize) + ", experts " +
                std::to_string(cfg.nExperts) + " x ffn " + std::to_string(cfg.expertFfn) +
                ") need at least " + buf + " (config.json changed after conversion?)"};
}

// Open shard files, closed on destruction.
class Shards {
public:
    explicit Shards(const Container& c) : m_c(c) {}
    ~Shards() {
        for (auto& [name, fd] : m_fds)
            ::close(fd);
    }
    Shards(const Shards&) = delete;
    Shards& operator=(const Shards&) = delete;

    std::string path(const std::string& file) const { return (fs::path(m_c.dir) / file).string(); }

    Status read(const std::string& file, uint64_t offset, uint64_t n, void* dst,
                const std::string& what) {
        auto it = m_fds.find(file);
        if (it == m_fds.end()) {
            Result<int> fd = openRegularFile(path(file));
            if (!fd) return fd.status();
            it = m_fds.emplace(file, fd.value()).first;
        }
        return io_detail::preadAll(it->second, offset, n, dst, path(file) + " (" + what + ")");
    }

private:
    const Container& m_c;
    std::map<std::string, int> m_fds;
};

// Stored bytes -> Matrix: quantised bytes kept as they are, bf16 widened, f32 copied.
void fillMatrix(Matrix& m, StoredFormat f, int64_t rows, int64_t cols, const uint8_t* src,
                uint64_t length) {
    m.rows = int(rows);
    m.cols = int(cols);
    if (isQuantised(f)) {
        m.q.assign(src, src + length);
        m.qfmt = weightFormat(f);
        return;
    }
    m.data.resize(size_t(rows * cols));
    if (f == StoredFormat::BF16) {
        std::vector<uint16_t> h(m.data.size());
        std::memcpy(h.data(), src, length);
        bf16ToF32(h.data(), m.data.data(), h.size());
    } else {
        std::memcpy(m.data.data(), src, length);
    }
}

// One non-expert tensor: quantised and f32 data read straight into place, bf16 through a copy.
Status readTensor(Shards& sh, const TensorEntry& t, const WeightSlot& s) {
    const std::string what = tensorWhat(t);
    const int64_t cols = s.shape.back(), rows = numel(s.shape) / cols;
    if (s.what == SlotKind::Vector) {
        s.vec->resize(size_t(numel(s.shape)));
        if (t.format == StoredFormat::F32)
            return sh.read(t.file, t.offset, t.length, s.vec->data(), what);
        std::vector<uint16_t> h(s.vec->size());
        COLI_RETURN_IF_ERROR(sh.read(t.file, t.offset, t.length, h.data(), what));
        bf16ToF32(h.data(), s.vec->data(), h.size());
        return {};
    }
    Matrix& m = *s.matrix;
    m.rows = int(rows);
    m.cols = int(cols);
    if (isQuantised(t.format)) {
        m.q.resize(t.length);
        m.qfmt = weightFormat(t.format);
        return sh.read(t.file, t.offset, t.length, m.q.data(), what);
    }
    if (t.format == StoredFormat::F32) {
        m.data.resize(size_t(rows * cols));
        return sh.read(t.file, t.offset, t.length, m.data.data(), what);
    }
    std::vector<uint8_t> raw(t.length);
    COLI_RETURN_IF_ERROR(sh.read(t.file, t.offset, t.length, raw.data(), what));
    fillMatrix(m, t.format, rows, cols, raw.data(), t.length);
    return {};
}

} // namespace

Status checkContainerFits(const Container& c, const ModelConfig& cfg) {
    COLI_RETURN_IF_ERROR(checkPlausible(c, cfg));
    const std::vector<WeightSlot> slots = planWeights(cfg, nullptr);
    std::string shown;
    size_t missing = 0;
    std::set<std::pair<int, int>> wanted;
    for (const WeightSlot& s : slots) {
        const bool present = s.what == SlotKind::Expert ? c.expert(s.layer, s.expert) != nullptr
                                                        : c.tensor(s.name) != nullptr;
        if (s.what == SlotKind::Expert) wanted.insert({s.layer, s.expert});
        if (present) continue;
        const std::string name = s.what == SlotKind::Expert
                                     ? "expert blob (layer " + std::to_string(s.layer) +
                                           ", expert " + std::to_string(s.expert) + ")"
                                     : s.name;
        if (++missing <= kShownMissing) shown += (missing > 1 ? ", " : "") + name;
    }
    if (missing > 0) {
        std::string msg = manifestPath(c) + ": " + std::to_string(missing) +
                          " tensor(s) config.json needs are missing: " + shown;
        if (missing > kShownMissing)
            msg += " and " + std::to_string(missing - kShownMissing) + " more";
        return {ErrorCode::NotFound, msg};
    }
    for (const ExpertEntry& e : c.experts)
        if (!wanted.count({e.layer, e.expert}))
            return {ErrorCode::Malformed,
                    manifestPath(c) + ": " + expertWhat(e) +
                        " is not in the model config.json describes (" +
                        std::to_string(cfg.nLayers) + " layers, " + std::to_string(cfg.nExperts) +
                        " experts per MoE layer): config.json changed after conversion?"};
    for (const WeightSlot& s : slots) {
        if (s.what != SlotKind::Expert) {
            const TensorEntry& t = *c.tensor(s.name);
            if (t.shape != s.shape)
                return {ErrorCode::Malformed, manifestPath(c) + ": " + tensorWhat(t) +
                                                  " has shape " + shapeString(t.shape) +
                                                  ", config.json needs " + shapeString(s.shape)};
            COLI_RETURN_IF_ERROR(checkStored(c, tensorWhat(t), t.format, t.shape, t.length));
            continue;
        }
        const ExpertEntry& e = *c.expert(s.layer, s.expert);
        const std::vector<int64_t> gu = s.shape, dn = {s.shape[1], s.shape[0]};
        for (auto [name, part, shape] :
             {std::tuple{"gate", &e.gate, &gu}, std::tuple{"up", &e.up, &gu},
              std::tuple{"down", &e.down, &dn}}) {
            if (part->shape != *shape)
                return {ErrorCode::Malformed, manifestPath(c) + ": " + expertWhat(e, name) +
                                                  " has shape " + shapeString(part->shape) +
                                                  ", config.json needs " + shapeString(*shape)};
            COLI_RETURN_IF_ERROR(
                checkStored(c, expertWhat(e, name), part->format, part->shape, part->length));
            if (part->offset + part->length > e.length)
                return {ErrorCode::Malformed,
                        manifestPath(c) + ": " + expertWhat(e, name) + " ends outside its blob"};
        }
    }
    return {};
}

Result<ModelWeights> loadContainerWeights(const Container& c, const ModelConfig& cfg,
                                          const WeightProgressFn& progress,
                                          const std::atomic<bool>* cancel, bool routedExperts) {
    COLI_RETURN_IF_ERROR(checkContainerFits(c, cfg));
    ModelWeights w;
    std::vector<WeightSlot> slots = planWeights(cfg, &w);
    if (!routedExperts)
        std::erase_if(slots, [](const WeightSlot& s) { return s.what == SlotKind::Expert; });
    uint64_t total = 0, done = 0;
    for (const WeightSlot& s : slots)
        total += s.what == SlotKind::Expert ? c.expert(s.layer, s.expert)->length
                                            : c.tensor(s.name)->length;
    Shards shards(c);
    std::vector<uint8_t> blob; // one expert at a time, reused
    for (const WeightSlot& s : slots) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            return Status(ErrorCode::Cancelled, c.dir + ": loading cancelled");
        if (s.what != SlotKind::Expert) {
            const TensorEntry& t = *c.tensor(s.name);
            COLI_RETURN_IF_ERROR(readTensor(shards, t, s));
            done += t.length;
        } else {
            const ExpertEntry& e = *c.expert(s.layer, s.expert);
            blob.resize(e.length);
            COLI_RETURN_IF_ERROR(
                shards.read(e.file, e.offset, e.length, blob.data(), expertWhat(e)));
            for (auto [part, m] : {std::pair{&e.gate, &s.mlp->gate}, std::pair{&e.up, &s.mlp->up},
                                   std::pair{&e.down, &s.mlp->down}})
                fillMatrix(*m, part->format, part->shape[0], part->shape[1],
                           blob.data() + part->offset, part->length);
            done += e.length;
        }
        if (progress) progress(total ? double(done) / double(total) : 1.0);
    }
    return w;
}

ModelSummary containerSummary(const Container& c, const ModelConfig& cfg) {
    ModelSummary s;
    if (!checkPlausible(c, cfg).isOk()) return s;
    for (const WeightSlot& slot : planWeights(cfg, nullptr)) {
        s.totalParams += slotParams(slot);
        if (slot.what == SlotKind::Expert) {
            if (const ExpertEntry* e = c.expert(slot.layer, slot.expert))
                s.expertBytes += int64_t(e->length);
        } else if (const TensorEntry* t = c.tensor(slot.name)) {
            s.denseBytes += int64_t(t->length);
        }
    }
    finishSummary(cfg, s);
    s.storage = "colibri container (" + c.describe() + ")";
    return s;
}

} // namespace coli::convert
