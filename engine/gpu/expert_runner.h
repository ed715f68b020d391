#pragma once
// Routed experts computed on a GPU, bit-identical to the CPU (docs/gpu.md): the VRAM copy of
// experts' quantised matrices, and a batch of (expert, token) jobs computed as the CPU's
// SwiGLU expert: gate and up (quant/matmul.h on the token's int8 input), act = siluShared(gate) *
// up (quant/shared_math.h), act quantised on the GPU (formats.cpp, restated), down.
// Jobs whose float operations met a subnormal, an inf or a NaN are flagged; the caller recomputes
// them on the CPU (a device may flush subnormals; the CPU reports non-finite results itself).
// Thread-safety: not thread-safe; one thread owns a runner (with its GpuContext).
#include "core/status.h"
#include "gpu/gpu_context.h"
#include "quant/formats.h"

#include <cstdint>
#include <memory>
#include <span>

namespace coli::gpu {

// The routed experts' shape and formats (all experts of a model share them).
struct ExpertShape {
    int dModel = 0; // d_model (gate/up cols, down rows)
    int ffn = 0;    // moe_intermediate_size (gate/up rows)
    quant::WeightFormat gateUp = quant::WeightFormat::Q4_G64; // gate and up
    quant::WeightFormat down = quant::WeightFormat::Q4_G64;
    // Bytes of one expert's gate, up and down, back to back (each starts 4-byte aligned).
    uint64_t expertBytes() const;
    uint64_t gateBytes() const;
    uint64_t downBytes() const;
};

// One job: the expert in VRAM slot `slot` applied to input row `inputRow`.
struct GpuJob {
    int slot = 0;
    int inputRow = 0;
};

class ExpertRunner {
public:
    // d_model must be a multiple of the gate's group size, ffn of the down projection's (and of 8
    // for the -r8 layouts, rows being tiled by eight). Reserves `slots` experts of VRAM
    // (device-local buffers of at most min(1 GiB, maxStorageBufferRange) each) and scratch for
    // `maxJobs` jobs and `maxJobs` input rows. Errors: InvalidArgument (shape not a multiple of the
    // groups, slots < 1), NoSpace when the device cannot hold them, Unsupported.
    static Result<std::unique_ptr<ExpertRunner>> create(GpuContext& ctx, const ExpertShape& shape,
                                                        int slots, int maxJobs);
    ~ExpertRunner();

    const ExpertShape& shape() const;
    int slots() const;
    int maxJobs() const;
    // VRAM held: the slots and the scratch (bytes).
    uint64_t deviceBytes() const;
    // Changes the number of slots (between batches). Shrinking releases the weights buffers whose
    // slots all lie at or past `slots` (a kept buffer may hold more slots than are used);
    // growing allocates buffers, the last one anew when it was partial (its slots' contents are
    // lost then). Returns the first slot whose contents were lost (min(old, new slots) when
    // none). Errors: InvalidArgument (slots < 1), Internal (a batch in flight), NoSpace /
    // Unsupported from the device (nothing changes then).
    Result<int> resize(int slots);
    // Host memory of the upload staging ring (GpuContext::reserveStaging: six matrices; 0 when
    // the slots are host-visible and filled by memcpy).
    uint64_t stagingBytes() const;

    // Copies an expert's three matrices into `slot` (gate [ffn, dModel], up [ffn, dModel] in
    // shape.gateUp; down [dModel, ffn] in shape.down: the container's bytes). The copy is queued
    // (GpuContext::upload) and the next submit() sees it; the sources may be reused at once.
    // While a batch is in flight, only into a slot the batch does not read (Internal otherwise).
    // Errors:
    // InvalidArgument (bad slot), Unsupported / NoSpace from the device.
    Status upload(int slot, const uint8_t* gate, const uint8_t* up, const uint8_t* down);

    // Starts a batch: jobs [n <= maxJobs]; the inputs are xq [nInputRows, dModel] int8 and
    // xs [nInputRows, dModel / G] with G the gate's group size (quant::quantiseActivationRow's
    // bytes). Returns at once. Errors: InvalidArgument (too many jobs or rows, a bad slot or row),
    // Unsupported (device failure).
    Status submit(std::span<const GpuJob> jobs, const int8_t* xq, const float* xs, int nInputRows);
    // Waits for the batch: y [n, dModel] (job order) and flags [n] (non-zero: recompute that job
    // on the CPU). Errors: Unsupported (device lost).
    Status wait(float* y, uint32_t* flags);
    // Seconds the device spent on the batch the last wait() completed, from Vulkan timestamps
    // around it (GpuContext::lastSubmitDeviceSeconds); 0 when that wait had no batch or the queue
    // has no timestamps (deviceTimestamps()).
    double lastBatchDeviceSeconds() const;
    bool deviceTimestamps() const;

private:
    ExpertRunner() = default;
    struct Impl;
    std::unique_ptr<Impl> m;
};

} // namespace coli::gpu
