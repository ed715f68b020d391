// Choosing the GPU tier's device (gpu/devices.h, `--gpu NAME|auto|none`) on made-up device lists:
// none, auto (discrete before integrated, CPU implementations and unusable devices skipped with a
// note), a name substring (case-insensitive, CPU devices included), unknown and unusable names.
// Then describeDevice, and the machine's real list where it has a Vulkan loader.
#include "gpu/devices.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace coli::gpu {
namespace {

// VK_MAKE_API_VERSION(0, major, minor, 0), without the Vulkan headers.
constexpr uint32_t apiVersion(uint32_t major, uint32_t minor) {
    return (major << 22) | (minor << 12);
}

DeviceInfo fake(std::string name, DeviceKind kind, uint32_t api = apiVersion(1, 3),
                bool compute = true) {
    DeviceInfo d;
    d.name = std::move(name);
    d.kind = kind;
    d.apiVersion = api;
    d.computeQueue = compute;
    return d;
}

// The list with each device's index its position.
std::vector<DeviceInfo> devices(std::vector<DeviceInfo> list) {
    for (size_t i = 0; i < list.size(); ++i)
        list[i].index = int(i);
    return list;
}

const char* kLavapipe = "llvmpipe (LLVM 15.0.6, 256 bits)";

int choose(const std::vector<DeviceInfo>& list, const std::string& spec, std::string* note) {
    Result<int> r = chooseDevice(list, spec, note);
    EXPECT_TRUE(r.isOk()) << spec << ": " << r.status().toString();
    return r.isOk() ? *r : -2;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

TEST(GpuDevices, KindNames) {
    EXPECT_STREQ(deviceKindName(DeviceKind::Discrete), "discrete");
    EXPECT_STREQ(deviceKindName(DeviceKind::Integrated), "integrated");
    EXPECT_STREQ(deviceKindName(DeviceKind::Virtual), "virtual");
    EXPECT_STREQ(deviceKindName(DeviceKind::Cpu), "cpu");
    EXPECT_STREQ(deviceKindName(DeviceKind::Other), "other");
}

TEST(GpuDevices, NoneChoosesNothing) {
    const auto list = devices(
        {fake("NVIDIA GeForce RTX 4090", DeviceKind::Discrete), fake(kLavapipe, DeviceKind::Cpu)});
    std::string note = "stale";
    EXPECT_EQ(choose(list, "none", &note), -1);
    EXPECT_TRUE(note.empty()) << note;
    EXPECT_EQ(choose({}, "none", nullptr), -1);
}

TEST(GpuDevices, AutoPrefersDiscreteOverIntegrated) {
    const auto list = devices({fake(kLavapipe, DeviceKind::Cpu),
                               fake("Intel(R) UHD Graphics 770", DeviceKind::Integrated),
                               fake("AMD Radeon RX 7900 XTX", DeviceKind::Discrete),
                               fake("NVIDIA GeForce RTX 4090", DeviceKind::Discrete)});
    std::string note;
    EXPECT_EQ(choose(list, "auto", &note), 2); // the first discrete one
    // Without a discrete GPU: the integrated one (the CPU implementation is skipped).
    const auto noDiscrete = devices({fake(kLavapipe, DeviceKind::Cpu),
                                     fake("Intel(R) UHD Graphics 770", DeviceKind::Integrated)});
    EXPECT_EQ(choose(noDiscrete, "auto", &note), 1);
    // The index returned is the device's own (its enumeration position), not its place here.
    std::vector<DeviceInfo> shifted = {fake("Intel Arc A770", DeviceKind::Discrete)};
    shifted[0].index = 3;
    EXPECT_EQ(choose(shifted, "auto", nullptr), 3);
}

TEST(GpuDevices, AutoSkipsCpuImplementationsWithANote) {
    std::string note;
    EXPECT_EQ(choose(devices({fake(kLavapipe, DeviceKind::Cpu)}), "auto", &note), -1);
    EXPECT_TRUE(contains(note, kLavapipe)) << note;
    EXPECT_TRUE(contains(note, "CPU")) << note;
    // Two CPU implementations: both named.
    EXPECT_EQ(choose(devices({fake(kLavapipe, DeviceKind::Cpu),
                              fake("SwiftShader Device (LLVM 10.0.0)", DeviceKind::Cpu)}),
                     "auto", &note),
              -1);
    EXPECT_TRUE(contains(note, kLavapipe)) << note;
    EXPECT_TRUE(contains(note, "SwiftShader Device")) << note;
    // Virtual and other kinds are no GPU tier for auto either.
    EXPECT_EQ(choose(devices({fake("virtio-gpu", DeviceKind::Virtual),
                              fake("mystery", DeviceKind::Other)}),
                     "auto", &note),
              -1);
    // No devices at all: -1, nothing skipped.
    EXPECT_EQ(choose({}, "auto", &note), -1);
    EXPECT_TRUE(note.empty()) << note;
}

TEST(GpuDevices, AutoSkipsDevicesWithoutVulkan12OrAComputeQueue) {
    const auto oldOne = fake("Old Discrete GPU", DeviceKind::Discrete, apiVersion(1, 1));
    const auto noCompute =
        fake("Graphics-only Discrete GPU", DeviceKind::Discrete, apiVersion(1, 3), false);
    std::string note;
    EXPECT_EQ(choose(devices({oldOne, noCompute,
                              fake("Intel(R) UHD Graphics 770", DeviceKind::Integrated)}),
                     "auto", &note),
              2);
    EXPECT_EQ(choose(devices({oldOne, noCompute, fake(kLavapipe, DeviceKind::Cpu)}), "auto", &note),
              -1);
    EXPECT_TRUE(contains(note, "Old Discrete GPU")) << note;
    EXPECT_TRUE(contains(note, "1.2")) << note;
    EXPECT_TRUE(contains(note, "Graphics-only Discrete GPU")) << note;
    EXPECT_TRUE(contains(note, "compute")) << note;
    EXPECT_TRUE(contains(note, kLavapipe)) << note;
    // Exactly Vulkan 1.2 is enough.
    EXPECT_EQ(choose(devices({fake("Just 1.2", DeviceKind::Integrated, apiVersion(1, 2))}), "auto",
                     &note),
              0);
}

TEST(GpuDevices, NameIsACaseInsensitiveSubstringAndMatchesCpuDevices) {
    const auto list = devices({fake("NVIDIA GeForce RTX 4090", DeviceKind::Discrete),
                               fake(kLavapipe, DeviceKind::Cpu),
                               fake("NVIDIA GeForce RTX 3060", DeviceKind::Discrete)});
    std::string note;
    EXPECT_EQ(choose(list, "llvmpipe", &note), 1);
    EXPECT_EQ(choose(list, "LLVMPIPE", &note), 1);
    EXPECT_EQ(choose(list, "LlvmPipe (llvm 15", &note), 1);
    EXPECT_EQ(choose(list, "rtx 3060", &note), 2);
    EXPECT_EQ(choose(list, "geforce", &note), 0); // the first that matches
    EXPECT_EQ(choose(list, kLavapipe, &note), 1); // the whole name
}

TEST(GpuDevices, UnknownNameListsTheDevices) {
    const auto list = devices(
        {fake("NVIDIA GeForce RTX 4090", DeviceKind::Discrete), fake(kLavapipe, DeviceKind::Cpu)});
    Result<int> r = chooseDevice(list, "radeon", nullptr);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
    const std::string msg = r.status().message();
    EXPECT_TRUE(contains(msg, "radeon")) << msg;
    EXPECT_TRUE(contains(msg, "NVIDIA GeForce RTX 4090")) << msg;
    EXPECT_TRUE(contains(msg, kLavapipe)) << msg;
    std::printf("[ gpu devices ] %s\n", r.status().toString().c_str());
    // No devices at all: still InvalidArgument.
    Result<int> none = chooseDevice({}, "llvmpipe", nullptr);
    EXPECT_EQ(none.status().code(), ErrorCode::InvalidArgument) << none.status().toString();
}

TEST(GpuDevices, UnusableNamedDeviceIsRefused) {
    const auto list =
        devices({fake("Old Discrete GPU", DeviceKind::Discrete, apiVersion(1, 1)),
                 fake("Graphics-only GPU", DeviceKind::Discrete, apiVersion(1, 3), false)});
    Result<int> old = chooseDevice(list, "old", nullptr);
    EXPECT_EQ(old.status().code(), ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(old.status().message(), "Old Discrete GPU")) << old.status().toString();
    EXPECT_TRUE(contains(old.status().message(), "1.2")) << old.status().toString();
    Result<int> noCompute = chooseDevice(list, "GRAPHICS", nullptr);
    EXPECT_EQ(noCompute.status().code(), ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(noCompute.status().message(), "Graphics-only GPU"))
        << noCompute.status().toString();
    EXPECT_TRUE(contains(noCompute.status().message(), "compute")) << noCompute.status().toString();
    std::printf("[ gpu devices ] %s\n[ gpu devices ] %s\n", old.status().toString().c_str(),
                noCompute.status().toString().c_str());
}

TEST(GpuDevices, DescribeDevice) {
    DeviceInfo gpu = fake("NVIDIA GeForce RTX 4090", DeviceKind::Discrete, apiVersion(1, 3));
    gpu.deviceLocalBytes = 24ull << 30;
    gpu.driverName = "NVIDIA";
    gpu.driverInfo = "535.104.05";
    const std::string g = describeDevice(gpu);
    EXPECT_TRUE(contains(g, "NVIDIA GeForce RTX 4090")) << g;
    EXPECT_TRUE(contains(g, "discrete")) << g;
    EXPECT_TRUE(contains(g, "Vulkan 1.3")) << g;
    EXPECT_TRUE(contains(g, "24.0 GiB")) << g;
    EXPECT_TRUE(contains(g, "535.104.05")) << g;
    DeviceInfo cpu = fake(kLavapipe, DeviceKind::Cpu, apiVersion(1, 2));
    cpu.sharesSystemMemory = true;
    cpu.deviceLocalBytes = 3ull << 29; // 1.5 GiB
    const std::string c = describeDevice(cpu);
    EXPECT_TRUE(contains(c, kLavapipe)) << c;
    EXPECT_TRUE(contains(c, "cpu")) << c;
    EXPECT_TRUE(contains(c, "Vulkan 1.2")) << c;
    EXPECT_TRUE(contains(c, "1.5 GiB shared with the system")) << c;
    std::printf("[ gpu devices ] %s\n[ gpu devices ] %s\n", g.c_str(), c.c_str());
}

// The machine's own devices (skipped without a Vulkan loader): each is described, lavapipe is a
// usable CPU device chosen by name, and auto never picks a CPU implementation.
// The default VRAM budget: 80 % of what the heap offers (VK_EXT_memory_budget's budget less this
// process's use when known), at most the given cap on a device sharing the system's memory.
TEST(GpuDevices, DefaultVramBudget) {
    constexpr uint64_t GiB = uint64_t(1) << 30;
    DeviceInfo gpu = fake("NVIDIA GeForce RTX 4090", DeviceKind::Discrete);
    gpu.deviceLocalBytes = 24 * GiB;
    EXPECT_EQ(defaultVramBudget(gpu, GiB), 24 * GiB / 5 * 4) << "not shared: no cap";
    gpu.memoryBudgetExt = true;
    gpu.heapBudgetBytes = 20 * GiB; // another program holds 4 GiB
    gpu.heapUsageBytes = 5 * GiB;   // we hold 5
    EXPECT_EQ(defaultVramBudget(gpu, GiB), 15 * GiB / 5 * 4);
    gpu.heapUsageBytes = 21 * GiB; // over the budget already
    EXPECT_EQ(defaultVramBudget(gpu, GiB), 0u);
    DeviceInfo igpu = fake("AMD Radeon 780M", DeviceKind::Integrated);
    igpu.deviceLocalBytes = 16 * GiB;
    igpu.sharesSystemMemory = true;
    EXPECT_EQ(defaultVramBudget(igpu, 4 * GiB), 4 * GiB) << "shared: the caller's cap";
    EXPECT_EQ(defaultVramBudget(igpu, 64 * GiB), 16 * GiB / 5 * 4);
    // describeDevice shows what the extension offers.
    gpu.heapUsageBytes = 0;
    EXPECT_TRUE(contains(describeDevice(gpu), "20.0 GiB available to this process"))
        << describeDevice(gpu);
}

TEST(GpuDevices, RealDevices) {
    Result<std::vector<DeviceInfo>> list = listDevices();
    if (!list) GTEST_SKIP() << "no Vulkan: " << list.status().toString();
    ASSERT_FALSE(list->empty());
    for (size_t i = 0; i < list->size(); ++i) {
        const DeviceInfo& d = (*list)[i];
        EXPECT_EQ(d.index, int(i));
        std::printf("[ gpu devices ] %d: %s\n", d.index, describeDevice(d).c_str());
    }
    std::string note;
    Result<int> autoChoice = chooseDevice(*list, "auto", &note);
    ASSERT_TRUE(autoChoice.isOk()) << autoChoice.status().toString();
    if (*autoChoice >= 0) {
        EXPECT_NE((*list)[size_t(*autoChoice)].kind, DeviceKind::Cpu);
    } else {
        std::printf("[ gpu devices ] auto: %s\n", note.c_str());
    }
    Result<int> lavapipe = chooseDevice(*list, "llvmpipe", nullptr);
    if (!lavapipe) GTEST_SKIP() << "no lavapipe: " << lavapipe.status().toString();
    const DeviceInfo& d = (*list)[size_t(*lavapipe)];
    EXPECT_EQ(d.kind, DeviceKind::Cpu);
    EXPECT_TRUE(d.computeQueue);
    EXPECT_GE(d.apiVersion, apiVersion(1, 2));
    EXPECT_TRUE(d.sharesSystemMemory);
    EXPECT_GT(d.maxStorageBufferRange, 0u);
    if (*autoChoice < 0) {
        EXPECT_TRUE(contains(note, d.name)) << note;
    }
}

} // namespace
} // namespace coli::gpu
