#pragma once
// The app's GPU tests run on Mesa's lavapipe, chosen by the GPU setting "llvmpipe": why that
// device is missing here, so that each case can skip saying so.
#include "gpu/devices.h"

#include <string>
#include <vector>

namespace coli::app::test {

// "" when a Vulkan device whose name contains "llvmpipe" is there, else the reason.
inline std::string missingLlvmpipe() {
    Result<std::vector<gpu::DeviceInfo>> devices = gpu::listDevices();
    if (!devices) return devices.status().toString();
    std::string note;
    Result<int> i = gpu::chooseDevice(*devices, "llvmpipe", &note);
    return i ? std::string() : i.status().toString();
}

} // namespace coli::app::test
