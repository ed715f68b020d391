#include "gpu/devices.h"

#include "gpu/vk_check.h"
#include "gpu/vulkan_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace coli::gpu {

const char* deviceKindName(DeviceKind k) {
    switch (k) {
    case DeviceKind::Discrete:
        return "discrete";
    case DeviceKind::Integrated:
        return "integrated";
    case DeviceKind::Virtual:
        return "virtual";
    case DeviceKind::Cpu:
        return "cpu";
    case DeviceKind::Other:
        return "other";
    }
    return "other";
}

std::string vkResultName(VkResult r) {
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
        return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
        return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
        return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
        return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
        return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
        return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
        return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
        return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
        return "VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver)";
    case VK_ERROR_TOO_MANY_OBJECTS:
        return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_TIMEOUT:
        return "VK_TIMEOUT";
    default:
        return "VkResult " + std::to_string(int(r));
    }
}

namespace {

DeviceKind kindOf(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return DeviceKind::Discrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return DeviceKind::Integrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return DeviceKind::Virtual;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return DeviceKind::Cpu;
    default:
        return DeviceKind::Other;
    }
}

bool hasExtension(VkPhysicalDevice pd, const char* name) {
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return false;
    std::vector<VkExtensionProperties> ext(n);
    if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data()) != VK_SUCCESS)
        return false;
    return std::any_of(ext.begin(), ext.end(), [&](const VkExtensionProperties& e) {
        return !std::strcmp(e.extensionName, name);
    });
}

DeviceInfo describe(VkPhysicalDevice pd, int index) {
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceFloatControlsProperties fc{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &driver;
    driver.pNext = &ids;
    ids.pNext = &fc;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceProperties& p = p2.properties;
    DeviceInfo d;
    d.index = index;
    d.name = p.deviceName;
    d.kind = kindOf(p.deviceType);
    d.apiVersion = p.apiVersion;
    d.driverVersion = p.driverVersion;
    d.vendorId = p.vendorID;
    d.deviceId = p.deviceID;
    d.driverId = uint32_t(driver.driverID);
    d.driverName = driver.driverName;
    d.driverInfo = driver.driverInfo;
    std::copy_n(ids.deviceUUID, 16, d.deviceUuid.begin());
    std::copy_n(p.pipelineCacheUUID, 16, d.pipelineCacheUuid.begin());
    d.roundingRte = fc.shaderRoundingModeRTEFloat32;
    d.signedZeroInfNanPreserve = fc.shaderSignedZeroInfNanPreserveFloat32;
    d.denormPreserve = fc.shaderDenormPreserveFloat32;
    d.maxStorageBufferRange = p.limits.maxStorageBufferRange;
    d.maxWorkGroupCountX =
        std::min(p.limits.maxComputeWorkGroupCount[0], p.limits.maxComputeWorkGroupCount[1]);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    int heap = -1;
    for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
        if ((mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            (heap < 0 || mem.memoryHeaps[h].size > mem.memoryHeaps[heap].size))
            heap = int(h);
    if (heap >= 0) {
        d.deviceLocalBytes = mem.memoryHeaps[heap].size;
        for (uint32_t t = 0; t < mem.memoryTypeCount; ++t)
            if (int(mem.memoryTypes[t].heapIndex) == heap &&
                (mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
                d.sharesSystemMemory =
                    d.kind == DeviceKind::Integrated || d.kind == DeviceKind::Cpu;
    }
    d.memoryBudgetExt = hasExtension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (d.memoryBudgetExt && heap >= 0) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{};
        budget.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
        VkPhysicalDeviceMemoryProperties2 mem2{};
        mem2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
        mem2.pNext = &budget;
        vkGetPhysicalDeviceMemoryProperties2(pd, &mem2);
        d.heapBudgetBytes = budget.heapBudget[heap];
        d.heapUsageBytes = budget.heapUsage[heap];
    }
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf.data());
    d.computeQueue = std::any_of(qf.begin(), qf.end(), [](const VkQueueFamilyProperties& q) {
        return (q.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
    });
    // The family GpuContext::create chooses: the last compute-only one, else the first compute one.
    int family = -1;
    for (uint32_t i = 0; i < nq; ++i)
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
            !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            family = int(i);
    for (uint32_t i = 0; i < nq && family < 0; ++i)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = int(i);
    if (family >= 0 && p.limits.timestampPeriod > 0) {
        d.timestampValidBits = qf[size_t(family)].timestampValidBits;
        d.timestampPeriodNs = d.timestampValidBits ? double(p.limits.timestampPeriod) : 0;
    }
    return d;
}

std::string lower(std::string s) {
    for (char& ch : s)
        ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

// Why the tier cannot use d (empty when it can).
std::string unusable(const DeviceInfo& d) {
    if (!d.computeQueue) return "no compute queue";
    if (d.apiVersion < VK_API_VERSION_1_2) return "older than Vulkan 1.2";
    return {};
}

} // namespace

Result<std::vector<DeviceInfo>> listDevices() {
    Result<VkInstance> inst = vulkanInstance();
    if (!inst) return inst.status();
    uint32_t n = 0;
    COLI_VK_TRY(vkEnumeratePhysicalDevices(*inst, &n, nullptr), "listing Vulkan devices");
    std::vector<VkPhysicalDevice> pds(n);
    COLI_VK_TRY(vkEnumeratePhysicalDevices(*inst, &n, pds.data()), "listing Vulkan devices");
    std::vector<DeviceInfo> out;
    for (uint32_t i = 0; i < n; ++i)
        out.push_back(describe(pds[i], int(i)));
    return out;
}

Result<int> chooseDevice(const std::vector<DeviceInfo>& devices, const std::string& spec,
                         std::string* note) {
    if (note) note->clear();
    if (spec == "none") return -1;
    if (spec == "auto") {
        std::vector<std::string> skipped;
        for (DeviceKind want : {DeviceKind::Discrete, DeviceKind::Integrated})
            for (const DeviceInfo& d : devices)
                if (d.kind == want) {
                    const std::string why = unusable(d);
                    if (why.empty()) return d.index;
                    skipped.push_back(d.name + ": " + why);
                }
        for (const DeviceInfo& d : devices)
            if (d.kind == DeviceKind::Cpu)
                skipped.push_back(d.name + ": a CPU implementation (choose it by name to use it)");
        if (note && !skipped.empty()) {
            *note = "no GPU tier: ";
            for (size_t i = 0; i < skipped.size(); ++i)
                *note += (i ? "; " : "") + skipped[i];
        }
        return -1;
    }
    const std::string want = lower(spec);
    std::string names;
    for (const DeviceInfo& d : devices) {
        if (lower(d.name).find(want) != std::string::npos) {
            const std::string why = unusable(d);
            if (!why.empty())
                return Status{ErrorCode::InvalidArgument,
                              "--gpu " + spec + ": " + d.name + " cannot be used (" + why + ")"};
            return d.index;
        }
        names += (names.empty() ? "" : ", ") + ("\"" + d.name + "\"");
    }
    return Status{ErrorCode::InvalidArgument,
                  "--gpu " + spec + ": no Vulkan device's name contains \"" + spec +
                      "\" (devices: " + (names.empty() ? "none" : names) + ")"};
}

uint64_t defaultVramBudget(const DeviceInfo& d, uint64_t sharedCapBytes) {
    uint64_t offered = d.deviceLocalBytes;
    if (d.heapBudgetBytes > 0)
        offered = std::min(offered, d.heapBudgetBytes > d.heapUsageBytes
                                        ? d.heapBudgetBytes - d.heapUsageBytes
                                        : uint64_t(0));
    const uint64_t b = offered / 5 * 4;
    return d.sharesSystemMemory ? std::min(b, sharedCapBytes) : b;
}

std::string describeDevice(const DeviceInfo& d) {
    const double gib = double(d.deviceLocalBytes) / double(1ull << 30);
    std::string s =
        fmt::format("{}, {}, Vulkan {}.{}, {:.1f} GiB {}", d.name, deviceKindName(d.kind),
                    VK_API_VERSION_MAJOR(d.apiVersion), VK_API_VERSION_MINOR(d.apiVersion), gib,
                    d.sharesSystemMemory ? "shared with the system" : "device-local");
    if (d.heapBudgetBytes > 0)
        s += fmt::format(" ({:.1f} GiB available to this process)",
                         double(d.heapBudgetBytes - std::min(d.heapBudgetBytes, d.heapUsageBytes)) /
                             double(1ull << 30));
    const std::string driver = d.driverName + (d.driverInfo.empty() ? "" : " " + d.driverInfo);
    return driver.empty() ? s : s + ", " + driver;
}

} // namespace coli::gpu
