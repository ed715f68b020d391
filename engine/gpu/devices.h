#pragma once
// The machine's Vulkan devices and the choice among them (`--gpu NAME|auto|none`, the app's
// setting; docs/gpu.md "Choosing a device").
#include "core/status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace coli::gpu {

enum class DeviceKind { Discrete, Integrated, Virtual, Cpu, Other };
const char* deviceKindName(DeviceKind k); // "discrete", "integrated", "virtual", "cpu", "other"

struct DeviceInfo {
    int index = 0; // position in vkEnumeratePhysicalDevices
    std::string
        name; // VkPhysicalDeviceProperties::deviceName, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
    DeviceKind kind = DeviceKind::Other;
    uint32_t apiVersion = 0, driverVersion = 0, vendorId = 0, deviceId = 0;
    uint32_t driverId = 0;                // VkDriverId
    std::string driverName, driverInfo;   // VkPhysicalDeviceDriverProperties
    std::array<uint8_t, 16> deviceUuid{}; // VkPhysicalDeviceIDProperties
    std::array<uint8_t, 16> pipelineCacheUuid{};
    uint64_t deviceLocalBytes = 0; // size of the largest device-local heap (bytes)
    // The device-local memory is also host-visible and is the system's RAM (integrated GPUs, CPU
    // implementations): the VRAM budget comes out of the RAM budget.
    bool sharesSystemMemory = false;
    bool memoryBudgetExt = false; // VK_EXT_memory_budget: the heap's budget at run time
    // Float controls (Vulkan 1.2) for 32-bit floats: which execution modes a shader may declare.
    bool roundingRte = false, signedZeroInfNanPreserve = false, denormPreserve = false;
    bool computeQueue = false;
    uint64_t maxStorageBufferRange = 0; // bytes one storage-buffer binding may span
    uint32_t maxWorkGroupCountX = 0;    // maxComputeWorkGroupCount[0] (and [1]: the smaller)
};

// Every Vulkan device, in enumeration order. Errors: those of vulkanInstance() (no loader, no
// driver) and enumeration failures. Thread-safety: safe from any thread.
Result<std::vector<DeviceInfo>> listDevices();

// The device `spec` names among `devices`:
//   "none"  -> index -1 (no GPU tier);
//   "auto"  -> the first discrete GPU, else the first integrated one, else -1; CPU implementations
//              (lavapipe) and devices without a compute queue or Vulkan 1.2 are skipped, and
//              *note says which were skipped and why;
//   NAME    -> the first device whose name contains NAME, case-insensitive (CPU ones included:
//              the tests choose "llvmpipe" so).
// Errors: InvalidArgument when NAME matches no device (the message lists the devices) or matches
// one without a compute queue or Vulkan 1.2. Thread-safety: pure.
Result<int> chooseDevice(const std::vector<DeviceInfo>& devices, const std::string& spec,
                         std::string* note);

// "llvmpipe (LLVM 15.0.6, 256 bits), cpu, Vulkan 1.3, 23.5 GiB shared with the system, llvmpipe
// Mesa 22.3.6" (coli info, the app's settings).
std::string describeDevice(const DeviceInfo& d);

} // namespace coli::gpu
