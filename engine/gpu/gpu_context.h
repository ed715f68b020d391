#pragma once
// One Vulkan device opened for the VRAM tier: its compute queue, memory, the kernels' pipelines
// and one command stream (docs/gpu.md). Internal to the tier: callers use ExpertRunner.
// Thread-safety: not thread-safe; one thread owns a context (the forward pass's master thread
// while a model runs; docs/design.md "Threading contract").
#include "core/status.h"
#include "gpu/devices.h"
#include "gpu/shader_set.h"

#include <cstdint>
#include <initializer_list>
#include <memory>

namespace coli::gpu {

struct GpuBuffer {
    void* buffer = nullptr; // VkBuffer
    void* memory = nullptr; // VkDeviceMemory
    void* mapped = nullptr; // host pointer when host-visible, else null
    uint64_t bytes = 0;
};

enum class Memory {
    Device, // device-local: weights and intermediates (host-visible too on unified devices)
    Host,   // host-visible and coherent: inputs and outputs the CPU writes and reads
};

// One binding of a dispatch: a whole buffer.
struct Binding {
    const GpuBuffer* buffer;
};

class GpuContext {
public:
    // Opens devices[index]: a queue with compute, the pipelines of Kernel (the variant matching the
    // device's float controls; `reversedMatvec` swaps in the test-only reversed-order matvec that
    // the self-test must reject). Errors: Unsupported (Vulkan failures, missing shaders).
    static Result<std::unique_ptr<GpuContext>> create(const DeviceInfo& device,
                                                      bool reversedMatvec = false);
    ~GpuContext();
    GpuContext(const GpuContext&) = delete;
    GpuContext& operator=(const GpuContext&) = delete;

    const DeviceInfo& device() const;
    // Bytes of device-local memory this context holds (Memory::Device allocations).
    uint64_t deviceBytes() const;

    // A buffer of `bytes` (at least 16). Errors: NoSpace when the device is out of memory,
    // Unsupported otherwise.
    Result<GpuBuffer> allocate(uint64_t bytes, Memory kind);
    void release(GpuBuffer& b);
    // Copies host bytes into b at `offset`: a memcpy when b is host-visible; otherwise through the
    // staging ring (reserveStaging; made on first use with entries of min(bytes, 16 MiB)), copies
    // submitted on the queue and not waited for: the next begin() orders them before its
    // dispatches (a barrier), and src may be reused at once. Allowed while a submission is in
    // flight when that submission does not read or write these bytes. Errors: as allocate;
    // Unsupported when a copy could not be submitted.
    Status upload(const GpuBuffer& b, uint64_t offset, const void* src, uint64_t bytes);
    // The staging ring: kStagingEntries host buffers of entryBytes (at least 4 KiB; larger uploads
    // go in pieces). No-op when it exists. Errors: as allocate.
    static constexpr int kStagingEntries = 6;
    Status reserveStaging(uint64_t entryBytes);
    uint64_t stagingBytes() const; // host memory of the ring (bytes; 0 before it is made)
    // Waits for every upload submitted. Errors: Unsupported (device lost).
    Status waitUploads();
    // Test hook: uploads go through the staging ring even into host-visible buffers, so that
    // tests on lavapipe (which maps all of its memory) run the path discrete GPUs take.
    void setStagedUploadsForTesting(bool on);

    // ---- one command stream: begin, dispatches, submit, wait ----
    void begin();
    // Records a dispatch of `k` with these bindings (in binding order) and push constants
    // (uint32 words). A barrier makes the next dispatch see this one's writes.
    void dispatch(Kernel k, std::initializer_list<Binding> bindings,
                  std::initializer_list<uint32_t> push, uint32_t groupsX, uint32_t groupsY);
    // Submits what was recorded; returns at once. Errors: Unsupported (Vulkan failure).
    Status submit();
    // Waits for the submission (no-op when none). Errors: Unsupported (device lost).
    Status wait();
    // Whether the queue has timestamps (VkQueueFamilyProperties::timestampValidBits != 0 and a
    // timestampPeriod): then every submission is timed on the device, from a top-of-pipe
    // timestamp written first to a bottom-of-pipe one written last.
    bool hasTimestamps() const;
    // Device seconds of the submission the last wait() completed (timestamp ticks times
    // VkPhysicalDeviceLimits::timestampPeriod); 0 when that wait had none or the queue has no
    // timestamps.
    double lastSubmitDeviceSeconds() const;

private:
    GpuContext() = default;
    struct Impl;
    std::unique_ptr<Impl> m;
};

} // namespace coli::gpu
