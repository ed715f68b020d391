#include "gpu/vulkan_loader.h"

#include "gpu/vk_check.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace coli::gpu {

std::string vulkanLoaderPath() {
    const char* env = std::getenv("COLI_VULKAN_LOADER");
    return env && *env ? env : "libvulkan.so.1";
}

namespace {

Result<VkInstance> createInstance() {
    const std::string path = vulkanLoaderPath();
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* why = dlerror();
        return Status{ErrorCode::Unsupported,
                      "no Vulkan loader (" + path + "): " + (why ? why : "dlopen failed")};
    }
    auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!gipa)
        return Status{ErrorCode::Unsupported,
                      path + " is not a Vulkan loader (no vkGetInstanceProcAddr)"};
    volkInitializeCustom(gipa);
    if (volkGetInstanceVersion() < VK_API_VERSION_1_2)
        return Status{ErrorCode::Unsupported,
                      "the Vulkan loader " + path + " is older than Vulkan 1.2 (float controls)"};
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "Colibri";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkInstance instance = VK_NULL_HANDLE;
    COLI_VK_TRY(vkCreateInstance(&ci, nullptr, &instance), "creating the Vulkan instance");
    volkLoadInstance(instance);
    // Kept until exit: devices and contexts made from it may live in static objects.
    return instance;
}

} // namespace

Result<VkInstance> vulkanInstance() {
    static std::once_flag once;
    static Result<VkInstance> result = Status{ErrorCode::Internal, "not initialised"};
    std::call_once(once, [] { result = createInstance(); });
    return result;
}

} // namespace coli::gpu
