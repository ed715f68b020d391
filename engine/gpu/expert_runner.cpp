#include "gpu/expert_runner.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace coli::gpu {

namespace {

constexpr uint32_t kRowsPerGroup = 16; // matvec.comp RPW
constexpr uint32_t kLocal = 64;        // local_size_x of every kernel

uint32_t ceilDiv(uint64_t a, uint64_t b) {
    return uint32_t((a + b - 1) / b);
}

} // namespace

uint64_t ExpertShape::gateBytes() const {
    return uint64_t(ffn) * quant::rowBytes(gateUp, dModel);
}
uint64_t ExpertShape::downBytes() const {
    return uint64_t(dModel) * quant::rowBytes(down, ffn);
}
uint64_t ExpertShape::expertBytes() const {
    return 2 * gateBytes() + downBytes();
}

struct ExpertRunner::Impl {
    GpuContext* ctx = nullptr;
    ExpertShape shape;
    int slots = 0, maxJobs = 0, slotsPerChunk = 0;
    std::vector<GpuBuffer> chunks;                  // weights arena, slotsPerChunk experts each
    GpuBuffer xq, xs, jobs, g, u, hq, hs, y, flags; // scratch
    int pending = 0;                                // jobs of the batch in flight
    std::vector<uint32_t> records; // [job, 4]: gate, up, down word offsets; input row
    std::vector<int> order;        // jobs sorted by chunk: order[k] = caller's index
    std::vector<int> batchSlots;   // the slots the batch in flight reads
    double lastDeviceSeconds = 0;  // of the batch the last wait() completed

    ~Impl() {
        if (!ctx) return;
        (void)ctx->wait();
        for (GpuBuffer& b : chunks)
            ctx->release(b);
        for (GpuBuffer* b : {&xq, &xs, &jobs, &g, &u, &hq, &hs, &y, &flags})
            ctx->release(*b);
    }
};

Result<std::unique_ptr<ExpertRunner>> ExpertRunner::create(GpuContext& ctx, const ExpertShape& s,
                                                           int slots, int maxJobs) {
    const quant::FormatInfo gi = quant::formatInfo(s.gateUp), di = quant::formatInfo(s.down);
    if (s.dModel <= 0 || s.ffn <= 0 || s.dModel % gi.groupSize || s.ffn % di.groupSize ||
        (gi.rowTile > 1 && s.ffn % gi.rowTile) || (di.rowTile > 1 && s.dModel % di.rowTile) ||
        slots < 1 || maxJobs < 1)
        return Status{ErrorCode::InvalidArgument,
                      "GPU experts: unsupported shape d_model " + std::to_string(s.dModel) +
                          ", ffn " + std::to_string(s.ffn) + ", " + std::to_string(slots) +
                          " slots, " + std::to_string(maxJobs) + " jobs"};
    // Every dispatch's group count within the device's limit (the SwiGLU one is the largest).
    const uint64_t groups = (uint64_t(maxJobs) * uint64_t(s.ffn) + kLocal - 1) / kLocal;
    const uint32_t limit = ctx.device().maxWorkGroupCountX;
    if (limit && (groups > limit || uint64_t(maxJobs) > limit))
        return Status{ErrorCode::InvalidArgument,
                      "GPU experts: " + std::to_string(maxJobs) + " jobs of ffn " +
                          std::to_string(s.ffn) + " need " + std::to_string(groups) +
                          " workgroups, over the device's " + std::to_string(limit)};
    std::unique_ptr<ExpertRunner> r(new ExpertRunner);
    r->m = std::make_unique<Impl>();
    Impl& m = *r->m;
    m.ctx = &ctx;
    m.shape = s;
    m.slots = slots;
    m.maxJobs = maxJobs;
    const uint64_t per = s.expertBytes();
    const uint64_t range = std::min<uint64_t>(1ull << 30, ctx.device().maxStorageBufferRange);
    m.slotsPerChunk = int(std::max<uint64_t>(1, range / per));
    if (per > range)
        return Status{ErrorCode::Unsupported, "GPU experts: one expert (" + std::to_string(per) +
                                                  " bytes) exceeds a storage buffer on " +
                                                  ctx.device().name};
    for (int left = slots; left > 0; left -= m.slotsPerChunk) {
        Result<GpuBuffer> b =
            ctx.allocate(uint64_t(std::min(left, m.slotsPerChunk)) * per, Memory::Device);
        if (!b) return b.status();
        m.chunks.push_back(*b);
    }
    const uint64_t J = uint64_t(maxJobs), d = uint64_t(s.dModel), f = uint64_t(s.ffn);
    struct Want {
        GpuBuffer* b;
        uint64_t bytes;
        Memory kind;
    };
    const Want wants[] = {{&m.xq, J * d, Memory::Host},
                          {&m.xs, J * (d / 32) * 4, Memory::Host},
                          {&m.jobs, J * 16, Memory::Host},
                          {&m.g, J * f * 4, Memory::Device},
                          {&m.u, J * f * 4, Memory::Device},
                          {&m.hq, J * f, Memory::Device},
                          {&m.hs, J * (f / 32) * 4, Memory::Device},
                          {&m.y, J * d * 4, Memory::Host},
                          {&m.flags, J * 4, Memory::Host}};
    for (const Want& w : wants) {
        Result<GpuBuffer> b = ctx.allocate(w.bytes, w.kind);
        if (!b) return b.status();
        *w.b = *b;
    }
    // Slots the host cannot map are filled through a staging ring of a few matrices.
    if (!r->m->chunks.empty() && !r->m->chunks.front().mapped)
        COLI_RETURN_IF_ERROR(ctx.reserveStaging(std::max(s.gateBytes(), s.downBytes())));
    return r;
}

ExpertRunner::~ExpertRunner() = default;

const ExpertShape& ExpertRunner::shape() const {
    return m->shape;
}
int ExpertRunner::slots() const {
    return m->slots;
}
int ExpertRunner::maxJobs() const {
    return m->maxJobs;
}

Result<int> ExpertRunner::resize(int slots) {
    Impl& m = *this->m;
    if (slots < 1)
        return Status{ErrorCode::InvalidArgument,
                      "GPU experts: " + std::to_string(slots) + " slots (at least 1)"};
    if (m.pending) return Status{ErrorCode::Internal, "GPU experts: resize with a batch in flight"};
    const uint64_t per = m.shape.expertBytes();
    const int spc = m.slotsPerChunk;
    const int need = (slots + spc - 1) / spc; // buffers the new count uses
    // Slots the buffers hold now (the last may be partial).
    const int held =
        m.chunks.empty() ? 0 : (int(m.chunks.size()) - 1) * spc + int(m.chunks.back().bytes / per);
    if (slots <= held) {
        while (int(m.chunks.size()) > need) {
            m.ctx->release(m.chunks.back());
            m.chunks.pop_back();
        }
        const int first = std::min(m.slots, slots);
        m.slots = slots;
        return first;
    }
    // Grow: the partial last buffer is made anew at its new size; then whole new ones.
    const bool partialLast = !m.chunks.empty() && held % spc != 0;
    const int keep = int(m.chunks.size()) - (partialLast ? 1 : 0);
    std::vector<GpuBuffer> fresh;
    for (int c = keep; c < need; ++c) {
        const int n = std::min(spc, slots - c * spc);
        Result<GpuBuffer> b = m.ctx->allocate(uint64_t(n) * per, Memory::Device);
        if (!b) {
            for (GpuBuffer& f : fresh)
                m.ctx->release(f);
            return b.status();
        }
        fresh.push_back(*b);
    }
    const int first = partialLast ? std::min(m.slots, keep * spc) : m.slots;
    if (partialLast) {
        m.ctx->release(m.chunks.back());
        m.chunks.pop_back();
    }
    m.chunks.insert(m.chunks.end(), fresh.begin(), fresh.end());
    m.slots = slots;
    return first;
}

uint64_t ExpertRunner::stagingBytes() const {
    return m->ctx->stagingBytes();
}

uint64_t ExpertRunner::deviceBytes() const {
    uint64_t n = 0;
    for (const GpuBuffer& b : m->chunks)
        n += b.bytes;
    for (const GpuBuffer* b : {&m->g, &m->u, &m->hq, &m->hs})
        n += b->bytes;
    return n;
}

Status ExpertRunner::upload(int slot, const uint8_t* gate, const uint8_t* up, const uint8_t* down) {
    if (slot < 0 || slot >= m->slots)
        return {ErrorCode::InvalidArgument, "GPU experts: no slot " + std::to_string(slot)};
    if (m->pending &&
        std::find(m->batchSlots.begin(), m->batchSlots.end(), slot) != m->batchSlots.end())
        return {ErrorCode::Internal, "GPU experts: upload into a slot the batch in flight reads"};
    const GpuBuffer& chunk = m->chunks[size_t(slot / m->slotsPerChunk)];
    const uint64_t at = uint64_t(slot % m->slotsPerChunk) * m->shape.expertBytes();
    const uint64_t gb = m->shape.gateBytes();
    COLI_RETURN_IF_ERROR(m->ctx->upload(chunk, at, gate, gb));
    COLI_RETURN_IF_ERROR(m->ctx->upload(chunk, at + gb, up, gb));
    return m->ctx->upload(chunk, at + 2 * gb, down, m->shape.downBytes());
}

Status ExpertRunner::submit(std::span<const GpuJob> jobs, const int8_t* xq, const float* xs,
                            int nInputRows) {
    Impl& m = *this->m;
    const int n = int(jobs.size());
    if (m.pending) return {ErrorCode::Internal, "GPU experts: a batch is already in flight"};
    if (n > m.maxJobs || nInputRows > m.maxJobs || nInputRows < 0)
        return {ErrorCode::InvalidArgument, "GPU experts: " + std::to_string(n) + " jobs / " +
                                                std::to_string(nInputRows) + " rows exceed " +
                                                std::to_string(m.maxJobs)};
    for (const GpuJob& j : jobs)
        if (j.slot < 0 || j.slot >= m.slots || j.inputRow < 0 || j.inputRow >= nInputRows)
            return {ErrorCode::InvalidArgument, "GPU experts: a job names slot " +
                                                    std::to_string(j.slot) + ", row " +
                                                    std::to_string(j.inputRow)};
    if (n == 0) return Status::ok();
    const ExpertShape& s = m.shape;
    const quant::FormatInfo gi = quant::formatInfo(s.gateUp), di = quant::formatInfo(s.down);
    // Inputs, packed as the shaders read them.
    const size_t d = size_t(s.dModel);
    std::memcpy(m.xq.mapped, xq, size_t(nInputRows) * d);
    std::memcpy(m.xs.mapped, xs, size_t(nInputRows) * (d / size_t(gi.groupSize)) * 4);
    // Jobs grouped by weights buffer (a matvec dispatch binds one), in the caller's order inside.
    m.order.resize(size_t(n));
    for (int i = 0; i < n; ++i)
        m.order[size_t(i)] = i;
    std::stable_sort(m.order.begin(), m.order.end(), [&](int a, int b) {
        return jobs[size_t(a)].slot / m.slotsPerChunk < jobs[size_t(b)].slot / m.slotsPerChunk;
    });
    m.records.resize(size_t(n) * 4);
    const uint64_t per = s.expertBytes(), gb = s.gateBytes();
    for (int k = 0; k < n; ++k) {
        const GpuJob& j = jobs[size_t(m.order[size_t(k)])];
        const uint64_t at = uint64_t(j.slot % m.slotsPerChunk) * per;
        uint32_t* rec = m.records.data() + size_t(k) * 4;
        rec[0] = uint32_t(at / 4);
        rec[1] = uint32_t((at + gb) / 4);
        rec[2] = uint32_t((at + 2 * gb) / 4);
        rec[3] = uint32_t(j.inputRow);
    }
    std::memcpy(m.jobs.mapped, m.records.data(), m.records.size() * 4);
    m.batchSlots.clear();
    for (const GpuJob& j : jobs)
        m.batchSlots.push_back(j.slot);
    std::memset(m.flags.mapped, 0, size_t(n) * 4);

    GpuContext& ctx = *m.ctx;
    ctx.begin();
    // matvec push: rows, cols, G, bits, tiled, weightSlot, inputByJob, jobBase.
    auto matvecs = [&](uint32_t slotField) {
        const bool down = slotField == 2;
        const quant::FormatInfo& fi = down ? di : gi;
        const uint32_t rows = uint32_t(down ? s.dModel : s.ffn),
                       cols = uint32_t(down ? s.ffn : s.dModel);
        const GpuBuffer& out = slotField == 0 ? m.g : slotField == 1 ? m.u : m.y;
        for (int k0 = 0; k0 < n;) {
            const int chunk = jobs[size_t(m.order[size_t(k0)])].slot / m.slotsPerChunk;
            int k1 = k0;
            while (k1 < n && jobs[size_t(m.order[size_t(k1)])].slot / m.slotsPerChunk == chunk)
                ++k1;
            const GpuBuffer& inQ = down ? m.hq : m.xq;
            const GpuBuffer& inS = down ? m.hs : m.xs;
            ctx.dispatch(
                Kernel::Matvec,
                {{&m.chunks[size_t(chunk)]}, {&inQ}, {&inS}, {&out}, {&m.flags}, {&m.jobs}},
                {rows, cols, uint32_t(fi.groupSize), uint32_t(fi.bits), uint32_t(fi.rowTile > 1),
                 slotField, down ? 1u : 0u, uint32_t(k0)},
                ceilDiv(rows, kRowsPerGroup), uint32_t(k1 - k0));
            k0 = k1;
        }
    };
    matvecs(0);
    matvecs(1);
    const uint64_t elems = uint64_t(n) * uint64_t(s.ffn);
    ctx.dispatch(Kernel::Swiglu, {{&m.g}, {&m.u}, {&m.flags}}, {uint32_t(elems), uint32_t(s.ffn)},
                 ceilDiv(elems, kLocal), 1);
    const uint64_t groups = uint64_t(n) * uint64_t(s.ffn / di.groupSize);
    ctx.dispatch(Kernel::QuantAct, {{&m.g}, {&m.hq}, {&m.hs}},
                 {uint32_t(s.ffn), uint32_t(n), uint32_t(di.groupSize)}, ceilDiv(groups, kLocal),
                 1);
    matvecs(2);
    COLI_RETURN_IF_ERROR(ctx.submit());
    m.pending = n;
    return Status::ok();
}

Status ExpertRunner::wait(float* y, uint32_t* flags) {
    Impl& m = *this->m;
    m.lastDeviceSeconds = 0;
    if (!m.pending) return Status::ok();
    const int n = m.pending;
    m.pending = 0;
    COLI_RETURN_IF_ERROR(m.ctx->wait());
    m.lastDeviceSeconds = m.ctx->lastSubmitDeviceSeconds();
    const size_t d = size_t(m.shape.dModel);
    const auto* gy = static_cast<const float*>(m.y.mapped);
    const auto* gf = static_cast<const uint32_t*>(m.flags.mapped);
    for (int k = 0; k < n; ++k) {
        const size_t i = size_t(m.order[size_t(k)]);
        std::memcpy(y + i * d, gy + size_t(k) * d, d * 4);
        flags[i] = gf[k];
    }
    return Status::ok();
}

double ExpertRunner::lastBatchDeviceSeconds() const {
    return m->lastDeviceSeconds;
}

bool ExpertRunner::deviceTimestamps() const {
    return m->ctx->hasTimestamps();
}

} // namespace coli::gpu
