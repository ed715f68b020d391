#pragma once
// Internal to engine/gpu: the Vulkan API through volk, and turning a VkResult into a Status.
#include "core/status.h"

#include <volk.h>

#include <string>

namespace coli::gpu {

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" and friends; the number for codes it does not know.
std::string vkResultName(VkResult r);

} // namespace coli::gpu

// Returns an Unsupported Status "<what>: <VkResult name>" from the calling function on failure
// (out-of-memory results give NoSpace: the caller may retry with a smaller VRAM budget).
#define COLI_VK_TRY(call, what)                                                                    \
    do {                                                                                           \
        const VkResult coli_vk_r_ = (call);                                                        \
        if (coli_vk_r_ != VK_SUCCESS)                                                              \
            return ::coli::Status{coli_vk_r_ == VK_ERROR_OUT_OF_DEVICE_MEMORY ||                   \
                                          coli_vk_r_ == VK_ERROR_OUT_OF_HOST_MEMORY                \
                                      ? ::coli::ErrorCode::NoSpace                                 \
                                      : ::coli::ErrorCode::Unsupported,                            \
                                  std::string(what) + ": " +                                       \
                                      ::coli::gpu::vkResultName(coli_vk_r_)};                      \
    } while (0)
