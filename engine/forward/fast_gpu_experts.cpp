#include "forward/fast_gpu_experts.h"

#include <chrono>
#include <cstring>

namespace coli {

void gpuSubmit(const ModelImpl& m, int layer, int n, const FfnItem* shared, bool streamed) {
    FastWorkspace& ws = m.ws;
    VramExperts& vram = *m.vram;
    // A layer abandoned after an error may have left its batch in flight: let it finish unread.
    (void)vram.runner().wait(ws.gpuY.data(), ws.gpuFlags.data());
    vram.clearBusy();
    ws.nGpuJobs = ws.nGpuItems = ws.nCpuItems = ws.nRedoItems = ws.handedCpu = 0;
    ws.gpuSubmitted = ws.gpuToCollect = false;
    for (int i = 0; i < ws.nItems; ++i) {
        const FfnItem& it = ws.items[size_t(i)];
        const int e = ws.unionExperts[size_t(i)];
        vram.use(layer, e, it.cnt);
        int slot = vram.slotOf(layer, e);
        if (slot < 0 && !streamed && vram.admit(layer, e, m.w.experts[size_t(layer)][size_t(e)]))
            slot = vram.slotOf(layer, e);
        ws.onGpu[size_t(i)] = slot >= 0;
        if (slot < 0) {
            if (!streamed) ws.cpuItems[size_t(ws.nCpuItems++)] = it;
            continue;
        }
        ++ws.nGpuItems;
        vram.markBusy(slot); // later admissions of this layer must not overwrite it
        for (int k = 0; k < it.cnt; ++k) {
            const int row = it.actRow + k;
            // The token of the row: direct items hold every token in order (route()).
            const int token = ws.gatherToken[size_t(row)] < 0 ? k : ws.gatherToken[size_t(row)];
            ws.gpuJobs[size_t(ws.nGpuJobs)] = {slot, token};
            ws.gpuJobRow[size_t(ws.nGpuJobs)] = row;
            ws.gpuJobItem[size_t(ws.nGpuJobs)] = i;
            ++ws.nGpuJobs;
        }
    }
    if (shared) ws.cpuItems[size_t(ws.nCpuItems++)] = *shared;
    if (ws.nGpuJobs == 0) return;
    const int group = quant::formatInfo(vram.runner().shape().gateUp).groupSize;
    const ActInput in = ws.qin.input(ws.h.data(), 0, n, m.cfg.dModel);
    const quant::QuantisedActivations& x = in.forGroup(group);
    const Status s = vram.runner().submit(
        std::span<const gpu::GpuJob>(ws.gpuJobs.data(), size_t(ws.nGpuJobs)), x.q, x.scales, n);
    ws.gpuSubmitted = s.isOk();
    ws.gpuToCollect = true;
}

void gpuCollect(const ModelImpl& m) {
    FastWorkspace& ws = m.ws;
    if (!ws.gpuToCollect) return;
    ws.gpuToCollect = false;
    VramExperts& vram = *m.vram;
    GpuCounters& c = vram.mutableCounters();
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = ws.gpuSubmitted && vram.runner().wait(ws.gpuY.data(), ws.gpuFlags.data()).isOk();
    c.waitSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (ok) c.deviceSeconds += vram.runner().lastBatchDeviceSeconds();
    if (ok) vram.clearBusy(); // the batch is done: its slots may take admissions again
    const size_t d = size_t(m.cfg.dModel);
    int lastRedo = -1;
    for (int j = 0; j < ws.nGpuJobs; ++j) {
        const bool flagged = vram.testFlagNext() || !ok || ws.gpuFlags[size_t(j)] != 0;
        if (!flagged) {
            std::memcpy(ws.slotOut.data() + size_t(ws.gpuJobRow[size_t(j)]) * d,
                        ws.gpuY.data() + size_t(j) * d, d * sizeof(float));
            continue;
        }
        ++c.flagged;
        const int item = ws.gpuJobItem[size_t(j)];
        if (item != lastRedo) { // jobs of one item are consecutive
            ws.redoPositions[size_t(ws.nRedoItems)] = item;
            ws.redoItems[size_t(ws.nRedoItems++)] = ws.items[size_t(item)];
        }
        lastRedo = item;
    }
    c.jobs += ws.nGpuJobs;
    for (int j = 0; j < ws.nGpuJobs; ++j)
        c.experts += j == 0 || ws.gpuJobItem[size_t(j)] != ws.gpuJobItem[size_t(j - 1)];
}

} // namespace coli
