#pragma once
// The GPU tier's self-test at load (docs/gpu.md "Self-test"): the device computes extreme
// matrix products, whole experts and a silu table, and every unflagged result must equal the
// CPU's bit for bit. A device that fails gets no experts: the run continues on the CPU.
// The verdict is cached per device UUID, driver ID, driver version and info, pipeline-cache UUID
// and the shaders' hash, so a driver update or a rebuilt shader tests again.
#include "core/status.h"
#include "gpu/gpu_context.h"

#include <string>

namespace coli::gpu {

struct SelfTestOptions {
    std::string cachePath; // the verdict cache (JSON); empty = no cache
};

struct SelfTestResult {
    bool passed = false;
    bool cached = false;   // the verdict came from the cache (nothing ran)
    std::string message;   // "llvmpipe (...): self-test passed (1,234 rows bit-identical, 0.08 s)"
    double seconds = 0;    // time spent running it (0 when cached)
    int64_t compared = 0;  // values compared bit for bit
    int64_t differing = 0; // unflagged values whose bits differ
    int64_t flagged = 0;   // jobs / rows the guard flagged (skipped, as the CPU recomputes them)
};

// Runs (or reads from the cache) the self-test on ctx's device. A failing device is a result
// with passed = false, not an error. Errors: Unsupported when the device fails to run the
// kernels at all (allocation, submission). A cache that cannot be read or written is ignored.
// Thread-safety: as GpuContext (the caller's thread owns ctx).
Result<SelfTestResult> runSelfTest(GpuContext& ctx, const SelfTestOptions& options);

// The default cache path: $XDG_CACHE_HOME/colibri/gpu-selftest.json (~/.cache when unset).
std::string defaultSelfTestCache();

} // namespace coli::gpu
