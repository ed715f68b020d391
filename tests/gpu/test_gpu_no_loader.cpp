// No Vulkan loader (gpu/vulkan_loader.h): with $COLI_VULKAN_LOADER naming a file that does not
// exist, or a shared library that is not a Vulkan loader, listDevices() is Unsupported with a
// message naming the file, and nothing crashes. vulkanInstance() keeps its first result for the
// whole process, so each case runs in its own process: ctest runs this binary once per case with
// --gtest_filter (tests/gpu/CMakeLists.txt); a second case in one process skips, saying so.
#include "gpu/devices.h"
#include "gpu/vulkan_loader.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace coli::gpu {
namespace {

// True for the first caller in this process (the one whose loader setting counts).
bool firstCaseInProcess() {
    static int cases = 0;
    return cases++ == 0;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

// ctest sets COLI_VULKAN_LOADER=/nonexistent/libvulkan.so.1 (the same when unset).
TEST(GpuNoLoader, MissingLoaderFileIsUnsupported) {
    if (!firstCaseInProcess())
        GTEST_SKIP() << "the loader was already opened in this process: run with --gtest_filter";
    const char* env = std::getenv("COLI_VULKAN_LOADER");
    if (!env || !*env) ::setenv("COLI_VULKAN_LOADER", "/nonexistent/libvulkan.so.1", 1);
    const std::string path = std::getenv("COLI_VULKAN_LOADER");
    ASSERT_FALSE(std::filesystem::exists(path)) << path;
    EXPECT_EQ(vulkanLoaderPath(), path);
    Result<std::vector<DeviceInfo>> devices = listDevices();
    ASSERT_FALSE(devices.isOk());
    EXPECT_EQ(devices.status().code(), ErrorCode::Unsupported) << devices.status().toString();
    EXPECT_TRUE(contains(devices.status().message(), path)) << devices.status().toString();
    std::printf("[ gpu no loader ] %s\n", devices.status().toString().c_str());
    // The same answer again (kept for the process), from the instance too.
    Result<std::vector<DeviceInfo>> again = listDevices();
    EXPECT_EQ(again.status().code(), ErrorCode::Unsupported);
    EXPECT_EQ(again.status().message(), devices.status().message());
    EXPECT_EQ(vulkanInstance().status().code(), ErrorCode::Unsupported);
}

// $COLI_VULKAN_LOADER pointing at a real shared library without vkGetInstanceProcAddr: the math
// library this process already has (found with dladdr, so the path fits any distribution).
TEST(GpuNoLoader, LibraryThatIsNotALoaderIsUnsupported) {
    if (!firstCaseInProcess())
        GTEST_SKIP() << "the loader was already opened in this process: run with --gtest_filter";
    void* sym = dlsym(RTLD_DEFAULT, "erff");
    ASSERT_NE(sym, nullptr) << "erff not found";
    Dl_info info{};
    ASSERT_NE(dladdr(sym, &info), 0);
    ASSERT_NE(info.dli_fname, nullptr);
    const std::string path = info.dli_fname;
    ASSERT_TRUE(std::filesystem::path(path).is_absolute()) << path;
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    ASSERT_EQ(dlsym(lib, "vkGetInstanceProcAddr"), nullptr) << path << " is a Vulkan loader";
    dlclose(lib);
    ::setenv("COLI_VULKAN_LOADER", path.c_str(), 1);
    Result<std::vector<DeviceInfo>> devices = listDevices();
    ASSERT_FALSE(devices.isOk());
    EXPECT_EQ(devices.status().code(), ErrorCode::Unsupported) << devices.status().toString();
    EXPECT_TRUE(contains(devices.status().message(), path)) << devices.status().toString();
    EXPECT_TRUE(contains(devices.status().message(), "not a Vulkan loader"))
        << devices.status().toString();
    std::printf("[ gpu no loader ] %s\n", devices.status().toString().c_str());
}

} // namespace
} // namespace coli::gpu
