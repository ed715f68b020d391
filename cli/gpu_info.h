#pragma once
// `coli info`'s GPU facts (docs/gpu.md): which of the model's experts the VRAM tier can compute,
// and the machine's Vulkan devices with what `--gpu auto` would choose.
#include <nlohmann/json.hpp>

#include <string>

namespace coli::cli {

// expertsLine: "int4-g64-r8 experts: the GPU tier can hold them (--gpu)" or why not.
void printGpuInfo(const std::string& expertsLine);
void addGpuInfoJson(nlohmann::ordered_json& j, const std::string& expertsLine);

} // namespace coli::cli
