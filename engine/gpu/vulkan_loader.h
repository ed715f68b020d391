#pragma once
// The Vulkan loader, opened at run time (docs/gpu.md "Loading"): nothing in Colibri links
// libvulkan, so the CLI and the app start on a machine without one and simply have no GPU tier.
// One VkInstance per process (volk keeps the entry points in globals), made on first use and kept
// until exit.
#include "core/status.h"

#include <string>

struct VkInstance_T;

namespace coli::gpu {

// The loader's file: $COLI_VULKAN_LOADER when set (tests point it at a file that is not a loader),
// else "libvulkan.so.1".
std::string vulkanLoaderPath();

// Opens the loader, creates the process's instance (Vulkan 1.2 or later is required: float
// controls) and loads the instance-level entry points. Later calls return the first call's
// result. Errors: Unsupported naming the loader path and dlopen's message, or the instance error
// (no driver: VK_ERROR_INCOMPATIBLE_DRIVER). Thread-safety: safe from any thread.
Result<VkInstance_T*> vulkanInstance();

} // namespace coli::gpu
