#pragma once
// The Vulkan device the GPU tests run on: $COLI_TEST_GPU (a name substring), else lavapipe
// ("llvmpipe"). One context per test process (docs/testing.md "GPU tier").
#include "gpu/devices.h"
#include "gpu/gpu_context.h"

#include <cstdlib>
#include <memory>
#include <string>

namespace coli::gpu::testing {

inline std::string testDeviceSpec() {
    const char* env = std::getenv("COLI_TEST_GPU");
    return env && *env ? env : "llvmpipe";
}

// The device's info, or a reason it is missing (the caller skips visibly with it).
inline Result<DeviceInfo> testDevice() {
    Result<std::vector<DeviceInfo>> devices = listDevices();
    if (!devices) return devices.status();
    std::string note;
    Result<int> i = chooseDevice(*devices, testDeviceSpec(), &note);
    if (!i) return i.status();
    return (*devices)[size_t(*i)];
}

// The process's shared context on the test device (null with *why set when unavailable).
inline GpuContext* testContext(std::string* why) {
    static std::string reason;
    static std::unique_ptr<GpuContext> ctx = [] {
        Result<DeviceInfo> d = testDevice();
        if (!d) {
            reason = d.status().toString();
            return std::unique_ptr<GpuContext>();
        }
        Result<std::unique_ptr<GpuContext>> c = GpuContext::create(*d);
        if (!c) {
            reason = c.status().toString();
            return std::unique_ptr<GpuContext>();
        }
        return std::move(*c);
    }();
    if (why) *why = reason;
    return ctx.get();
}

} // namespace coli::gpu::testing

#define COLI_GPU_CONTEXT_OR_SKIP(ctx)                                                              \
    std::string coli_gpu_why_;                                                                     \
    ::coli::gpu::GpuContext* ctx = ::coli::gpu::testing::testContext(&coli_gpu_why_);              \
    if (!ctx) GTEST_SKIP() << "no Vulkan device for the GPU tests: " << coli_gpu_why_
