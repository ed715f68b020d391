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
    // With VK_EXT_memory_budget, that heap's VkPhysicalDeviceMemoryBudgetPropertiesEXT at the
    // time of listing: heapBudget (what this process may allocate in all, its own use included:
    // less than the heap when other programs use the device) and heapUsage (this process's).
    // 0 without the extension.
    uint64_t heapBudgetBytes = 0, heapUsageBytes = 0;
    // Float controls (Vulkan 1.2) for 32-bit floats: which execution modes a shader may declare.
    bool roundingRte = false, signedZeroInfNanPreserve = false, denormPreserve = false;
    bool computeQueue = false;
    // Timestamps on the compute queue family GpuContext opens (the last compute-only family, else
    // the first with compute): its timestampValidBits (0: no timestamps, device times read 0) and
    // VkPhysicalDeviceLimits::timestampPeriod (ns per tick).
    uint32_t timestampValidBits = 0;
    double timestampPeriodNs = 0;
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
// The VRAM budget for experts when the user gives none (bytes; docs/gpu.md "Budget"): 80 % of
// what the device-local heap offers (VK_EXT_memory_budget's heapBudget less this process's
// usage when the device has the extension, else the heap's size); on a device that shares the
// system's memory, at most sharedCapBytes (the caller's share of the RAM budget). Thread-safe.
uint64_t defaultVramBudget(const DeviceInfo& d, uint64_t sharedCapBytes);

std::string describeDevice(const DeviceInfo& d);

} // namespace coli::gpu
