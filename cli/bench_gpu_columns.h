#pragma once
// The VRAM axis of `coli bench decode` (--gpu, --vram-budgets; docs/gpu.md "Benchmark"): the
// budget lists' syntax, the device and expert size a VRAM budget is counted in, and the GPU
// columns of a row (VRAM hit rate, device ms and wait ms per decoded token, MB uploaded,
// evictions, flagged jobs) from two Model::gpuCounters() snapshots.
// Thread-safety: pure, apart from probeVramAxis (loads the model) and vramAxis (lists devices).
#include "core/status.h"
#include "forward/model.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coli::cli {

// A --budgets or --vram-budgets item: "N%" (0 < N <= 100) into *percent, else a plain byte
// count (no unit suffix) into *bytes. Returns "" or the problem.
std::string parseBudget(const std::string& text, std::optional<double>* percent, uint64_t* bytes);

// What a VRAM budget is counted in: the device --gpu chooses and the model's routed experts.
struct VramAxis {
    std::string gpu;    // --gpu as given
    std::string device; // the chosen device's name
    // Its compute queue's timestamps (gpu::DeviceInfo): 0 valid bits = none (gpu_ms/t is n/a).
    uint32_t timestampBits = 0;
    double timestampPeriodNs = 0;
    int totalExperts = 0;     // routed experts of the model (sparse layers x experts)
    uint64_t expertBytes = 0; // one expert in VRAM (gate, up, down: gpu::ExpertShape)
    uint64_t allBytes() const { return uint64_t(totalExperts) * expertBytes; }
};

// The axis for `gpu` ("auto" or a device name) and a model loaded with streamed experts (their
// formats come from its expert source). Errors: Unsupported (experts not quantised alike, no
// Vulkan, --gpu auto finding no GPU), InvalidArgument (a name matching no device: the message
// lists them).
Result<VramAxis> vramAxis(const std::string& gpu, const Model& streamed);
// Loads `dir` with streamed experts (no GPU) to get vramAxis(gpu, ...).
Result<VramAxis> probeVramAxis(const std::string& dir, const std::string& gpu, int threads);

// A --vram-budgets item in bytes: "0" = no GPU tier (0), "N%" of every routed expert (a whole
// number of experts, at least one), or bytes (at least one expert). Errors: InvalidArgument.
Result<uint64_t> vramBudgetBytes(const std::string& text, const VramAxis& axis);

// after - before for the cumulative fields (resident, capacity, expertBytes from `after`).
GpuCounters gpuDelta(const GpuCounters& after, const GpuCounters& before);

// One row's GPU figures. Decode-step figures come from the counters over the decode steps;
// uploads and evictions over the whole run (prompt and decode).
struct GpuRowFigures {
    bool active = false;                  // the row ran with a GPU tier (VRAM budget > 0)
    double vramShare = 0;                 // last run: routed experts computed in VRAM / routed
    std::vector<double> deviceMsPerToken; // per measured run
    std::vector<double> waitMsPerToken;   // per measured run
    GpuCounters decode;                   // last run's decode steps
    GpuCounters run;                      // last run's prompt and decode
    // A measured run of `tokens` decode steps: its counters over the decode steps and over the
    // whole run.
    void add(const GpuCounters& decodeSteps, const GpuCounters& wholeRun, int tokens);
};

// The column titles and one row's cells (fixed widths, matching).
std::string gpuColumnsHeader();
std::string gpuColumns(const GpuRowFigures& f);
// The legend of those columns.
std::string gpuColumnsLegend();
// "llvmpipe (...) (--gpu llvmpipe), timestamps 64 bits x 1 ns; VRAM budgets: 0 = no GPU tier, N%
// of the K routed experts (X MiB each, Y MiB all), or bytes".
std::string describeVramAxis(const VramAxis& axis);

} // namespace coli::cli
