#include "tiers/expert_source.h"

#include "convert/manifest.h"
#include "convert/stored_format.h"
#include "core/strings.h"
#include "io/dtype.h"
#include "io/safetensors.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

namespace coli::tiers {

namespace {

uint64_t alignUp(uint64_t n, uint64_t a) {
    return (n + a - 1) / a * a;
}
uint64_t alignDown(uint64_t n, uint64_t a) {
    return n / a * a;
}

// ---- container: one read of the blob, views into it ----

struct PartView {
    uint64_t offset = 0; // inside the blob
    int rows = 0, cols = 0;
    bool quantised = false;
    quant::WeightFormat qfmt = quant::WeightFormat::Q8_G32;
};

struct BlobEntry {
    int file = -1;
    uint64_t offset = 0, length = 0;
    PartView parts[3];
};

MatrixView partView(const PartView& p, const uint8_t* slot) {
    MatrixView v;
    v.rows = p.rows;
    v.cols = p.cols;
    v.qfmt = p.qfmt;
    if (p.quantised)
        v.q = slot + p.offset;
    else
        v.data = reinterpret_cast<const float*>(slot + p.offset);
    return v;
}

class ContainerSource final : public ExpertSource {
public:
    ContainerSource(std::unique_ptr<DiskRouter> router, int nExperts, std::vector<BlobEntry> blobs,
                    uint64_t slot, std::string formats)
        : m_router(std::move(router)), m_nExperts(nExperts), m_blobs(std::move(blobs)),
          m_slotBytes(slot), m_formats(std::move(formats)) {}
    uint64_t slotBytes() const override { return m_slotBytes; }
    uint64_t readBytes() const override { return m_slotBytes; }
    int readsPerExpert() const override { return 1; }
    void load(ExpertId id, uint8_t* slot, LoadDone done) override {
        const BlobEntry& b = entry(id);
        const aio::ReadRequest read{b.file, b.offset, b.length, slot};
        m_router->submit(id.layer, id.expert, {&read, 1}, std::move(done));
    }
    SwiGluView view(ExpertId id, const uint8_t* slot) const override {
        const BlobEntry& b = entry(id);
        SwiGluView v;
        v.gate = partView(b.parts[0], slot);
        v.up = partView(b.parts[1], slot);
        v.down = partView(b.parts[2], slot);
        return v;
    }
    std::string describe() const override {
        return "colibri container, 1 read of " + mibString(m_slotBytes, 2) + " per expert (" +
               m_formats + ")";
    }
    const DiskRouter* router() const override { return m_router.get(); }
    bool quantisedFormats(quant::WeightFormat* gateUp, quant::WeightFormat* down) const override {
        bool first = true;
        for (const BlobEntry& b : m_blobs) {
            if (b.file < 0) continue;
            if (!b.parts[0].quantised || !b.parts[1].quantised || !b.parts[2].quantised)
                return false;
            if (first) {
                *gateUp = b.parts[0].qfmt;
                *down = b.parts[2].qfmt;
                first = false;
            }
            if (b.parts[0].qfmt != *gateUp || b.parts[1].qfmt != *gateUp ||
                b.parts[2].qfmt != *down)
                return false;
        }
        return !first;
    }

private:
    const BlobEntry& entry(ExpertId id) const {
        return m_blobs[size_t(id.layer) * m_nExperts + id.expert];
    }
    std::unique_ptr<DiskRouter> m_router;
    int m_nExperts;
    std::vector<BlobEntry> m_blobs; // [n_layers * n_experts]; file -1 for dense layers
    uint64_t m_slotBytes;
    std::string m_formats;
};

// ---- checkpoint: three reads, widened to f32 ----

struct RawPart {
    int file = -1;
    DType dtype = DType::F32;
    uint64_t offset = 0, length = 0; // the part's bytes in the file
    bool direct = false;             // the file reads through O_DIRECT: the range is rounded out
    int rows = 0, cols = 0;
};

class CheckpointSource final : public ExpertSource {
public:
    CheckpointSource(aio::IoPool& pool, std::unique_ptr<DiskRouter> router, int nExperts,
                     std::vector<std::array<RawPart, 3>> parts, uint64_t f32Bytes,
                     uint64_t stagingBytes, uint64_t readBytes)
        : m_pool(pool), m_router(std::move(router)), m_nExperts(nExperts),
          m_parts(std::move(parts)), m_f32Bytes(f32Bytes), m_stagingBytes(stagingBytes),
          m_readBytes(readBytes) {}
    uint64_t slotBytes() const override { return m_f32Bytes + m_stagingBytes; }
    uint64_t readBytes() const override { return m_readBytes; }
    int readsPerExpert() const override { return 3; }

    void load(ExpertId id, uint8_t* slot, LoadDone done) override {
        const std::array<RawPart, 3>& parts = entry(id);
        uint64_t f32At = 0, stageAt = m_f32Bytes;
        struct Plan {
            uint8_t* dst;  // where the read lands
            uint64_t skip; // bytes before the part's first byte (O_DIRECT alignment)
            float* out;    // f32 destination
            bool widen;    // the read went to staging
        };
        std::array<Plan, 3> plans;
        std::array<aio::ReadRequest, 3> reqs;
        for (int p = 0; p < 3; ++p) {
            const RawPart& r = parts[p];
            float* out = reinterpret_cast<float*>(slot + f32At);
            f32At += uint64_t(r.rows) * r.cols * 4;
            const bool direct = r.direct;
            uint64_t off = r.offset, len = r.length, skip = 0;
            if (direct) {
                off = alignDown(r.offset, kSlotAlign);
                skip = r.offset - off;
                len = alignUp(skip + r.length, kSlotAlign);
            }
            const bool widen = direct || r.dtype != DType::F32;
            uint8_t* dst = widen ? slot + stageAt : reinterpret_cast<uint8_t*>(out);
            if (widen) stageAt += alignUp(len, kSlotAlign);
            plans[p] = {dst, skip, out, widen};
            reqs[p] = {r.file, off, len, dst};
        }
        // The router completes the three reads together (from one disk); then the parts are
        // widened on that pool thread.
        const std::array<RawPart, 3>* partsPtr = &parts;
        m_router->submit(
            id.layer, id.expert, reqs,
            [plans, partsPtr, done = std::move(done)](const Status& result, Disk disk) {
                if (result.isOk())
                    for (int q = 0; q < 3; ++q) {
                        const Plan& pl = plans[q];
                        const RawPart& r = (*partsPtr)[q];
                        if (!pl.widen) continue;
                        const uint8_t* src = pl.dst + pl.skip;
                        const size_t n = size_t(r.rows) * r.cols;
                        if (r.dtype == DType::F32) {
                            std::memcpy(pl.out, src, n * 4);
                        } else {
                            // The staging bytes may be unaligned for uint16 after `skip`: copy.
                            std::vector<uint16_t> h(n);
                            std::memcpy(h.data(), src, n * 2);
                            if (r.dtype == DType::BF16)
                                bf16ToF32(h.data(), pl.out, n);
                            else
                                f16ToF32(h.data(), pl.out, n);
                        }
                    }
                done(result, disk);
            });
    }

    SwiGluView view(ExpertId id, const uint8_t* slot) const override {
        const std::array<RawPart, 3>& parts = entry(id);
        SwiGluView v;
        MatrixView* views[3] = {&v.gate, &v.up, &v.down};
        uint64_t at = 0;
        for (int p = 0; p < 3; ++p) {
            views[p]->rows = parts[p].rows;
            views[p]->cols = parts[p].cols;
            views[p]->data = reinterpret_cast<const float*>(slot + at);
            at += uint64_t(parts[p].rows) * parts[p].cols * 4;
        }
        return v;
    }
    std::string describe() const override {
        return "checkpoint, 3 reads (" + mibString(m_readBytes, 2) + ") per expert, widened to f32";
    }
    const DiskRouter* router() const override { return m_router.get(); }

private:
    const std::array<RawPart, 3>& entry(ExpertId id) const {
        return m_parts[size_t(id.layer) * m_nExperts + id.expert];
    }
    aio::IoPool& m_pool;
    std::unique_ptr<DiskRouter> m_router;
    int m_nExperts;
    std::vector<std::array<RawPart, 3>> m_parts;
    uint64_t m_f32Bytes, m_stagingBytes, m_readBytes;
};

} // namespace

Result<std::unique_ptr<ExpertSource>> openContainerSource(const convert::Container& c,
                                                          const ModelConfig& cfg, aio::IoPool& pool,
                                                          const MirrorSetup& mirror) {
    namespace fs = std::filesystem;
    auto router = std::make_unique<DiskRouter>(pool, mirror);
    std::vector<BlobEntry> blobs(size_t(cfg.nLayers) * cfg.nExperts);
    std::map<std::string, int> files;
    uint64_t slot = 0;
    for (int l = 0; l < cfg.nLayers; ++l) {
        if (!cfg.sparseLayer[l]) continue;
        for (int e = 0; e < cfg.nExperts; ++e) {
            const convert::ExpertEntry* x = c.expert(l, e);
            if (!x)
                return Status(ErrorCode::NotFound, c.dir + "/colibri.json: no blob for layer " +
                                                       std::to_string(l) + ", expert " +
                                                       std::to_string(e));
            auto it = files.find(x->file);
            if (it == files.end()) {
                Result<int> f = router->openFile((fs::path(c.dir) / x->file).string());
                if (!f) return f.status();
                it = files.emplace(x->file, *f).first;
            }
            BlobEntry& b = blobs[size_t(l) * cfg.nExperts + e];
            b.file = it->second;
            b.offset = x->offset;
            b.length = x->length;
            const convert::ExpertPart* parts[3] = {&x->gate, &x->up, &x->down};
            for (int p = 0; p < 3; ++p) {
                const convert::ExpertPart& part = *parts[p];
                PartView& v = b.parts[p];
                v.offset = part.offset;
                v.rows = int(part.shape[0]);
                v.cols = int(part.shape[1]);
                if (convert::isQuantised(part.format)) {
                    v.quantised = true;
                    v.qfmt = convert::weightFormat(part.format);
                } else if (part.format != convert::StoredFormat::F32 || part.offset % 4 != 0) {
                    return Status(ErrorCode::Unsupported,
                                  c.dir + "/colibri.json: expert blob '" + x->tensor +
                                      "' stores a part as " +
                                      convert::storedFormatName(part.format) +
                                      ": streaming experts needs them quantised (int4/int8) or "
                                      "f32; convert again with the default expert format");
                }
            }
            slot = std::max(slot, x->length);
        }
    }
    return std::unique_ptr<ExpertSource>(
        std::make_unique<ContainerSource>(std::move(router), cfg.nExperts, std::move(blobs),
                                          alignUp(slot, kSlotAlign), c.describe()));
}

bool checkpointReadsBuffered(aio::DirectIo mode, DType expertDtype) {
    return mode == aio::DirectIo::Off || (mode == aio::DirectIo::Auto && expertDtype == DType::F32);
}

Result<std::unique_ptr<ExpertSource>> openCheckpointSource(const Checkpoint& ckpt,
                                                           const ModelConfig& cfg,
                                                           aio::IoPool& pool,
                                                           const MirrorSetup& mirror) {
    auto router = std::make_unique<DiskRouter>(pool, mirror);
    std::vector<std::array<RawPart, 3>> parts(size_t(cfg.nLayers) * cfg.nExperts);
    std::map<int, int> files; // checkpoint shard -> pool file
    uint64_t f32 = 0, staging = 0, readBytes = 0;
    // The first routed expert's gate tells the experts' dtype (a checkpoint stores one).
    DType expertDtype = DType::F32;
    for (int l = 0; l < cfg.nLayers; ++l) {
        if (!cfg.sparseLayer[l]) continue;
        Result<std::array<ExpertTensorRange, 3>> loc = locateExpert(ckpt, cfg, l, 0);
        if (!loc) return loc.status();
        expertDtype = (*loc)[0].tensor->dtype;
        break;
    }
    const bool buffered = checkpointReadsBuffered(pool.directIoMode(), expertDtype);
    for (int l = 0; l < cfg.nLayers; ++l) {
        if (!cfg.sparseLayer[l]) continue;
        for (int e = 0; e < cfg.nExperts; ++e) {
            Result<std::array<ExpertTensorRange, 3>> loc = locateExpert(ckpt, cfg, l, e);
            if (!loc) return loc.status();
            uint64_t f = 0, st = 0, rd = 0;
            for (int p = 0; p < 3; ++p) {
                const ExpertTensorRange& r = (*loc)[p];
                const TensorInfo& t = *r.tensor;
                if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
                    return Status(ErrorCode::Unsupported,
                                  ckpt.dir() + ": tensor '" + t.name + "' is " +
                                      dtypeName(t.dtype) +
                                      ": streamed experts are read as F32, F16 or BF16");
                auto it = files.find(t.shard);
                if (it == files.end()) {
                    Result<int> fi = router->openFile(ckpt.shardPaths()[size_t(t.shard)], buffered);
                    if (!fi) return fi.status();
                    it = files.emplace(t.shard, *fi).first;
                }
                RawPart& rp = parts[size_t(l) * cfg.nExperts + e][p];
                rp.file = it->second;
                rp.dtype = t.dtype;
                rp.offset = t.fileOffset + uint64_t(r.firstElement) * dtypeSize(t.dtype);
                rp.length = uint64_t(r.count) * dtypeSize(t.dtype);
                rp.rows = r.rows;
                rp.cols = r.cols;
                rp.direct = pool.fileDirect(rp.file);
                const bool direct = rp.direct;
                f += uint64_t(r.count) * 4;
                uint64_t len = rp.length;
                if (direct)
                    len = alignUp(rp.offset - alignDown(rp.offset, kSlotAlign) + rp.length,
                                  kSlotAlign);
                rd += len;
                if (direct || t.dtype != DType::F32) st += alignUp(len, kSlotAlign);
            }
            f32 = std::max(f32, f);
            staging = std::max(staging, st);
            readBytes = std::max(readBytes, rd);
        }
    }
    return std::unique_ptr<ExpertSource>(
        std::make_unique<CheckpointSource>(pool, std::move(router), cfg.nExperts, std::move(parts),
                                           alignUp(f32, kSlotAlign), staging, readBytes));
}

} // namespace coli::tiers
