#include "gpu_info.h"

#include "gpu/devices.h"

#include <fmt/core.h>

namespace coli::cli {

namespace {

// "llvmpipe (...), cpu, Vulkan 1.3, ..." per device, then what auto chooses; or why none.
std::vector<std::string> deviceLines(std::string* autoChoice) {
    std::vector<std::string> lines;
    Result<std::vector<gpu::DeviceInfo>> devices = gpu::listDevices();
    if (!devices) {
        *autoChoice = "none (" + devices.status().message() + ")";
        return lines;
    }
    for (const gpu::DeviceInfo& d : *devices)
        lines.push_back(gpu::describeDevice(d));
    std::string note;
    Result<int> pick = gpu::chooseDevice(*devices, "auto", &note);
    if (pick && *pick >= 0)
        *autoChoice = (*devices)[size_t(*pick)].name;
    else
        *autoChoice = "none" + (note.empty() ? std::string() : " (" + note + ")");
    return lines;
}

} // namespace

void printGpuInfo(const std::string& expertsLine) {
    std::string autoChoice;
    const std::vector<std::string> lines = deviceLines(&autoChoice);
    fmt::print("GPU tier:         {}\n", expertsLine);
    if (lines.empty()) fmt::print("Vulkan devices:   none\n");
    for (size_t i = 0; i < lines.size(); ++i)
        fmt::print("{}{}\n", i == 0 ? "Vulkan devices:   " : "                  ", lines[i]);
    fmt::print("--gpu auto:       {}\n", autoChoice);
}

void addGpuInfoJson(nlohmann::ordered_json& j, const std::string& expertsLine) {
    std::string autoChoice;
    j["gpu_tier"] = expertsLine;
    j["vulkan_devices"] = deviceLines(&autoChoice);
    j["gpu_auto"] = autoChoice;
}

} // namespace coli::cli
