// The self-test at load: passes on a conforming device (lavapipe here), fails on the test-only
// matvec that adds the groups in reverse order, and caches its verdict per device and shaders.
#include "gpu/self_test.h"
#include "gpu_test_device.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace coli::gpu {
namespace {

std::string tempCache(const char* name) {
    const auto p = std::filesystem::temp_directory_path() /
                   (std::string("coli-gpu-") + name + "-" + std::to_string(::getpid()) + ".json");
    std::filesystem::remove(p);
    return p.string();
}

TEST(GpuSelfTest, PassesOnTheTestDeviceAndIsCached) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const std::string cache = tempCache("selftest");
    Result<SelfTestResult> r = runSelfTest(*ctx, {cache});
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    std::printf("%s\n", r->message.c_str());
    EXPECT_TRUE(r->passed) << r->message;
    EXPECT_FALSE(r->cached);
    EXPECT_GT(r->compared, 8000);
    EXPECT_EQ(r->differing, 0);
    // The extreme fills overflow and underflow on purpose: the guard must have flagged some.
    EXPECT_GT(r->flagged, 0);
    Result<SelfTestResult> again = runSelfTest(*ctx, {cache});
    ASSERT_TRUE(again.isOk());
    EXPECT_TRUE(again->cached);
    EXPECT_TRUE(again->passed);
    std::filesystem::remove(cache);
}

TEST(GpuSelfTest, RejectsReversedGroupOrder) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    Result<std::unique_ptr<GpuContext>> bad = GpuContext::create(ctx->device(), true);
    ASSERT_TRUE(bad.isOk()) << bad.status().toString();
    Result<SelfTestResult> r = runSelfTest(**bad, {});
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    std::printf("%s\n", r->message.c_str());
    EXPECT_FALSE(r->passed);
    EXPECT_GT(r->differing, 100) << "lavapipe computes a reversed float sum differently";
}

} // namespace
} // namespace coli::gpu
