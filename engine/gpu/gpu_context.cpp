#include "gpu/gpu_context.h"

#include "gpu/vk_check.h"
#include "gpu/vulkan_loader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace coli::gpu {

namespace {

struct KernelLayout {
    Kernel kernel;
    uint32_t bindings;
    uint32_t pushWords;
};
constexpr KernelLayout kLayouts[] = {
    {Kernel::Matvec, 6, 8}, {Kernel::Swiglu, 3, 2}, {Kernel::QuantAct, 3, 3}};

struct Pipeline {
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    uint32_t bindings = 0, pushWords = 0;
};

VkBuffer vkBuf(const GpuBuffer& b) {
    return static_cast<VkBuffer>(b.buffer);
}

} // namespace

struct GpuContext::Impl {
    DeviceInfo info;
    VkPhysicalDevice pd = VK_NULL_HANDLE;
    VkDevice dev = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = 0;
    VkPhysicalDeviceMemoryProperties mem{};
    VkCommandPool cmdPool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkDescriptorPool descPool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    // Uploads go through a ring of staging buffers, each with its own command buffer and fence:
    // a copy is submitted and not waited for (it overlaps the CPU's work and the batch in
    // flight); an entry is waited for only when it comes round again, or when a new copy writes
    // bytes its copy writes. Bounded: kStagingEntries x stagingEntryBytes of host memory.
    struct Staging {
        GpuBuffer buf;
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        VkFence fence = VK_NULL_HANDLE;
        bool pending = false;
        const void* dst = nullptr; // the destination VkBuffer of the pending copy
        uint64_t dstOffset = 0, dstBytes = 0;
    };
    std::vector<Staging> staging;
    size_t nextStaging = 0;
    uint64_t stagingEntryBytes = 0;
    bool forceStaging = false; // setStagedUploadsForTesting
    std::array<Pipeline, 3> pipes{};
    bool inFlight = false;
    // Timestamps around each submission: query 0 at the top of the pipe, 1 at the bottom.
    VkQueryPool queryPool = VK_NULL_HANDLE;
    uint32_t timestampBits = 0; // the queue family's timestampValidBits; 0: no timestamps
    double timestampPeriodNs = 0;
    double lastSeconds = 0; // of the submission the last wait() completed
    uint64_t deviceBytes = 0;

    ~Impl() {
        if (!dev) return;
        vkDeviceWaitIdle(dev);
        for (Pipeline& p : pipes) {
            if (p.pipeline) vkDestroyPipeline(dev, p.pipeline, nullptr);
            if (p.layout) vkDestroyPipelineLayout(dev, p.layout, nullptr);
            if (p.setLayout) vkDestroyDescriptorSetLayout(dev, p.setLayout, nullptr);
        }
        if (queryPool) vkDestroyQueryPool(dev, queryPool, nullptr);
        if (fence) vkDestroyFence(dev, fence, nullptr);
        for (Staging& s : staging) {
            if (s.fence) vkDestroyFence(dev, s.fence, nullptr);
            if (s.buf.mapped) vkUnmapMemory(dev, static_cast<VkDeviceMemory>(s.buf.memory));
            if (s.buf.buffer) vkDestroyBuffer(dev, static_cast<VkBuffer>(s.buf.buffer), nullptr);
            if (s.buf.memory) vkFreeMemory(dev, static_cast<VkDeviceMemory>(s.buf.memory), nullptr);
        }
        if (descPool) vkDestroyDescriptorPool(dev, descPool, nullptr);
        if (cmdPool) vkDestroyCommandPool(dev, cmdPool, nullptr);
        vkDestroyDevice(dev, nullptr);
    }

    // A memory type allowed by `bits` with all of `want`; -1 when none.
    int memoryType(uint32_t bits, VkMemoryPropertyFlags want) const {
        for (uint32_t i = 0; i < mem.memoryTypeCount; ++i)
            if ((bits & (1u << i)) && (mem.memoryTypes[i].propertyFlags & want) == want)
                return int(i);
        return -1;
    }

    Status makePipeline(const KernelLayout& kl, const EmbeddedShader* spv, Pipeline* p) {
        if (!spv)
            return {ErrorCode::Unsupported, "GPU tier: a shader variant is missing from the build"};
        p->bindings = kl.bindings;
        p->pushWords = kl.pushWords;
        std::vector<VkDescriptorSetLayoutBinding> b(kl.bindings);
        for (uint32_t i = 0; i < kl.bindings; ++i)
            b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
        VkDescriptorSetLayoutCreateInfo dsl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
        dsl.bindingCount = kl.bindings;
        dsl.pBindings = b.data();
        COLI_VK_TRY(vkCreateDescriptorSetLayout(dev, &dsl, nullptr, &p->setLayout),
                    "creating a descriptor set layout");
        VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, kl.pushWords * 4};
        VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
        pl.setLayoutCount = 1;
        pl.pSetLayouts = &p->setLayout;
        pl.pushConstantRangeCount = 1;
        pl.pPushConstantRanges = &pcr;
        COLI_VK_TRY(vkCreatePipelineLayout(dev, &pl, nullptr, &p->layout),
                    "creating a pipeline layout");
        VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        sm.codeSize = size_t(spv->count) * 4;
        sm.pCode = spv->words;
        VkShaderModule module = VK_NULL_HANDLE;
        COLI_VK_TRY(vkCreateShaderModule(dev, &sm, nullptr, &module),
                    std::string("loading shader ") + spv->name);
        VkComputePipelineCreateInfo cp{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
        cp.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
        cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        cp.stage.module = module;
        cp.stage.pName = "main";
        cp.layout = p->layout;
        const VkResult r =
            vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cp, nullptr, &p->pipeline);
        vkDestroyShaderModule(dev, module, nullptr);
        COLI_VK_TRY(r, std::string("compiling shader ") + spv->name);
        return Status::ok();
    }
};

Result<std::unique_ptr<GpuContext>> GpuContext::create(const DeviceInfo& device,
                                                       bool reversedMatvec) {
    Result<VkInstance> inst = vulkanInstance();
    if (!inst) return inst.status();
    std::unique_ptr<GpuContext> ctx(new GpuContext);
    ctx->m = std::make_unique<Impl>();
    Impl& m = *ctx->m;
    m.info = device;
    uint32_t n = 0;
    COLI_VK_TRY(vkEnumeratePhysicalDevices(*inst, &n, nullptr), "listing Vulkan devices");
    std::vector<VkPhysicalDevice> pds(n);
    COLI_VK_TRY(vkEnumeratePhysicalDevices(*inst, &n, pds.data()), "listing Vulkan devices");
    if (device.index < 0 || uint32_t(device.index) >= n)
        return Status{ErrorCode::InvalidArgument, "GPU tier: no Vulkan device " + device.name};
    m.pd = pds[size_t(device.index)];
    vkGetPhysicalDeviceMemoryProperties(m.pd, &m.mem);
    vkGetPhysicalDeviceQueueFamilyProperties(m.pd, &n, nullptr);
    std::vector<VkQueueFamilyProperties> qf(n);
    vkGetPhysicalDeviceQueueFamilyProperties(m.pd, &n, qf.data());
    // A compute-only family first (it may run beside graphics work), else any with compute.
    int family = -1;
    for (uint32_t i = 0; i < n; ++i)
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
            !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            family = int(i);
    for (uint32_t i = 0; i < n && family < 0; ++i)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = int(i);
    if (family < 0) return Status{ErrorCode::Unsupported, device.name + ": no compute queue"};
    m.family = uint32_t(family);
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = m.family;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &q;
    COLI_VK_TRY(vkCreateDevice(m.pd, &dci, nullptr, &m.dev), "opening " + device.name);
    volkLoadDevice(m.dev);
    vkGetDeviceQueue(m.dev, m.family, 0, &m.queue);

    VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cp.queueFamilyIndex = m.family;
    cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    COLI_VK_TRY(vkCreateCommandPool(m.dev, &cp, nullptr, &m.cmdPool), "creating a command pool");
    VkCommandBufferAllocateInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cb.commandPool = m.cmdPool;
    cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cb.commandBufferCount = 1;
    COLI_VK_TRY(vkAllocateCommandBuffers(m.dev, &cb, &m.cmd), "allocating a command buffer");
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 6 * 1024};
    VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dp.maxSets = 1024;
    dp.poolSizeCount = 1;
    dp.pPoolSizes = &ps;
    COLI_VK_TRY(vkCreateDescriptorPool(m.dev, &dp, nullptr, &m.descPool),
                "creating a descriptor pool");
    VkFenceCreateInfo fc{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    COLI_VK_TRY(vkCreateFence(m.dev, &fc, nullptr, &m.fence), "creating a fence");
    // Timestamps where the queue has them; without them (or the pool) batches are simply untimed.
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(m.pd, &props);
    if (qf[m.family].timestampValidBits != 0 && props.limits.timestampPeriod > 0) {
        VkQueryPoolCreateInfo qp{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qp.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qp.queryCount = 2;
        if (vkCreateQueryPool(m.dev, &qp, nullptr, &m.queryPool) == VK_SUCCESS) {
            m.timestampBits = qf[m.family].timestampValidBits;
            m.timestampPeriodNs = double(props.limits.timestampPeriod);
        } else {
            m.queryPool = VK_NULL_HANDLE;
        }
    }

    const int mask = floatControlsMask(device);
    for (size_t i = 0; i < 3; ++i) {
        const KernelLayout& kl = kLayouts[i];
        const Kernel variant =
            kl.kernel == Kernel::Matvec && reversedMatvec ? Kernel::MatvecReversed : kl.kernel;
        COLI_RETURN_IF_ERROR(m.makePipeline(kl, shaderFor(variant, mask), &m.pipes[i]));
    }
    return ctx;
}

GpuContext::~GpuContext() = default;

const DeviceInfo& GpuContext::device() const {
    return m->info;
}

uint64_t GpuContext::deviceBytes() const {
    return m->deviceBytes;
}

Result<GpuBuffer> GpuContext::allocate(uint64_t bytes, Memory kind) {
    GpuBuffer b;
    b.bytes = bytes < 16 ? 16 : bytes;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = b.bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
    VkBuffer buf = VK_NULL_HANDLE;
    COLI_VK_TRY(vkCreateBuffer(m->dev, &bi, nullptr, &buf), "creating a GPU buffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(m->dev, buf, &req);
    const VkMemoryPropertyFlags hostFlags =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int type = -1;
    if (kind == Memory::Device) {
        // Host-visible device-local memory first (unified devices, ReBAR): no staging needed.
        type = m->memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | hostFlags);
        if (type < 0) type = m->memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    } else {
        type = m->memoryType(req.memoryTypeBits, hostFlags | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        if (type < 0) type = m->memoryType(req.memoryTypeBits, hostFlags);
    }
    if (type < 0) {
        vkDestroyBuffer(m->dev, buf, nullptr);
        return Status{ErrorCode::Unsupported, m->info.name + ": no suitable memory type"};
    }
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = uint32_t(type);
    VkDeviceMemory memory = VK_NULL_HANDLE;
    const VkResult r = vkAllocateMemory(m->dev, &ai, nullptr, &memory);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(m->dev, buf, nullptr);
        COLI_VK_TRY(r, "allocating " + std::to_string(b.bytes) + " bytes on " + m->info.name);
    }
    vkBindBufferMemory(m->dev, buf, memory, 0);
    if (m->mem.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        if (vkMapMemory(m->dev, memory, 0, VK_WHOLE_SIZE, 0, &b.mapped) != VK_SUCCESS)
            b.mapped = nullptr;
    }
    b.buffer = buf;
    b.memory = memory;
    if (kind == Memory::Device) m->deviceBytes += b.bytes;
    return b;
}

void GpuContext::release(GpuBuffer& b) {
    if (!b.buffer) return;
    if (b.mapped) vkUnmapMemory(m->dev, static_cast<VkDeviceMemory>(b.memory));
    vkDestroyBuffer(m->dev, vkBuf(b), nullptr);
    vkFreeMemory(m->dev, static_cast<VkDeviceMemory>(b.memory), nullptr);
    b = GpuBuffer{};
}

Status GpuContext::reserveStaging(uint64_t entryBytes) {
    if (!m->staging.empty()) return Status::ok();
    m->stagingEntryBytes = std::max<uint64_t>(entryBytes, 4096);
    m->staging.resize(kStagingEntries);
    for (Impl::Staging& s : m->staging) {
        Result<GpuBuffer> b = allocate(m->stagingEntryBytes, Memory::Host);
        if (!b) {
            for (Impl::Staging& t : m->staging)
                release(t.buf);
            m->staging.clear();
            return b.status();
        }
        s.buf = *b;
        VkCommandBufferAllocateInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        cb.commandPool = m->cmdPool;
        cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cb.commandBufferCount = 1;
        COLI_VK_TRY(vkAllocateCommandBuffers(m->dev, &cb, &s.cmd), "allocating a command buffer");
        VkFenceCreateInfo fc{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        COLI_VK_TRY(vkCreateFence(m->dev, &fc, nullptr, &s.fence), "creating a fence");
    }
    return Status::ok();
}

void GpuContext::setStagedUploadsForTesting(bool on) {
    m->forceStaging = on;
}

uint64_t GpuContext::stagingBytes() const {
    return m->stagingEntryBytes * m->staging.size();
}

Status GpuContext::waitUploads() {
    for (Impl::Staging& s : m->staging)
        if (s.pending) {
            s.pending = false;
            COLI_VK_TRY(vkWaitForFences(m->dev, 1, &s.fence, VK_TRUE, UINT64_MAX),
                        "uploading to " + m->info.name);
        }
    return Status::ok();
}

Status GpuContext::upload(const GpuBuffer& b, uint64_t offset, const void* src, uint64_t bytes) {
    if (offset + bytes > b.bytes)
        return {ErrorCode::Internal, "GPU upload past the end of a buffer"};
    if (b.mapped && !m->forceStaging) {
        std::memcpy(static_cast<uint8_t*>(b.mapped) + offset, src, bytes);
        return Status::ok();
    }
    COLI_RETURN_IF_ERROR(reserveStaging(std::min<uint64_t>(bytes, uint64_t(16) << 20)));
    // Copies to the same bytes must not overlap in time (different submissions carry no order).
    for (Impl::Staging& s : m->staging)
        if (s.pending && s.dst == b.buffer && s.dstOffset < offset + bytes &&
            offset < s.dstOffset + s.dstBytes) {
            s.pending = false;
            COLI_VK_TRY(vkWaitForFences(m->dev, 1, &s.fence, VK_TRUE, UINT64_MAX),
                        "uploading to " + m->info.name);
        }
    const uint8_t* from = static_cast<const uint8_t*>(src);
    for (uint64_t done = 0; done < bytes;) {
        const uint64_t n = std::min(bytes - done, m->stagingEntryBytes);
        Impl::Staging& s = m->staging[m->nextStaging];
        m->nextStaging = (m->nextStaging + 1) % m->staging.size();
        if (s.pending) {
            s.pending = false;
            COLI_VK_TRY(vkWaitForFences(m->dev, 1, &s.fence, VK_TRUE, UINT64_MAX),
                        "uploading to " + m->info.name);
        }
        std::memcpy(s.buf.mapped, from + done, n);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        vkResetCommandBuffer(s.cmd, 0);
        vkBeginCommandBuffer(s.cmd, &bi);
        VkBufferCopy copy{0, offset + done, n};
        vkCmdCopyBuffer(s.cmd, vkBuf(s.buf), vkBuf(b), 1, &copy);
        vkEndCommandBuffer(s.cmd);
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &s.cmd;
        vkResetFences(m->dev, 1, &s.fence);
        COLI_VK_TRY(vkQueueSubmit(m->queue, 1, &si, s.fence), "uploading to " + m->info.name);
        s.pending = true;
        s.dst = b.buffer;
        s.dstOffset = offset + done;
        s.dstBytes = n;
        done += n;
    }
    return Status::ok();
}

void GpuContext::begin() {
    vkResetDescriptorPool(m->dev, m->descPool, 0);
    vkResetCommandBuffer(m->cmd, 0);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(m->cmd, &bi);
    if (m->timestampBits) {
        vkCmdResetQueryPool(m->cmd, m->queryPool, 0, 2);
        vkCmdWriteTimestamp(m->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, m->queryPool, 0);
    }
    // Uploads submitted earlier on this queue (not waited for) are seen by this batch's shaders:
    // a barrier's first scope covers every command submitted before it on the queue.
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
    vkCmdPipelineBarrier(m->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void GpuContext::dispatch(Kernel k, std::initializer_list<Binding> bindings,
                          std::initializer_list<uint32_t> push, uint32_t groupsX,
                          uint32_t groupsY) {
    const Pipeline& p = m->pipes[k == Kernel::Swiglu ? 1 : k == Kernel::QuantAct ? 2 : 0];
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = m->descPool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &p.setLayout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vkAllocateDescriptorSets(m->dev, &ai, &set);
    std::vector<VkDescriptorBufferInfo> infos;
    infos.reserve(bindings.size());
    for (const Binding& b : bindings)
        infos.push_back({vkBuf(*b.buffer), 0, VK_WHOLE_SIZE});
    std::vector<VkWriteDescriptorSet> writes(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = uint32_t(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(m->dev, uint32_t(writes.size()), writes.data(), 0, nullptr);
    vkCmdBindPipeline(m->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdBindDescriptorSets(m->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                            nullptr);
    std::vector<uint32_t> words(push);
    words.resize(p.pushWords, 0u);
    vkCmdPushConstants(m->cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.pushWords * 4,
                       words.data());
    vkCmdDispatch(m->cmd, groupsX, groupsY, 1);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask =
        VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(m->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &mb, 0, nullptr, 0, nullptr);
}

Status GpuContext::submit() {
    if (m->timestampBits)
        vkCmdWriteTimestamp(m->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m->queryPool, 1);
    vkEndCommandBuffer(m->cmd);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &m->cmd;
    vkResetFences(m->dev, 1, &m->fence);
    COLI_VK_TRY(vkQueueSubmit(m->queue, 1, &si, m->fence), "submitting to " + m->info.name);
    m->inFlight = true;
    return Status::ok();
}

Status GpuContext::wait() {
    m->lastSeconds = 0;
    if (!m->inFlight) return Status::ok();
    m->inFlight = false;
    COLI_VK_TRY(vkWaitForFences(m->dev, 1, &m->fence, VK_TRUE, UINT64_MAX),
                "waiting for " + m->info.name);
    if (m->timestampBits) {
        uint64_t t[2] = {0, 0};
        if (vkGetQueryPoolResults(m->dev, m->queryPool, 0, 2, sizeof t, t, sizeof(uint64_t),
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) ==
            VK_SUCCESS) {
            // Only the low timestampValidBits bits count (they may wrap between the two).
            const uint64_t mask =
                m->timestampBits >= 64 ? ~uint64_t(0) : (uint64_t(1) << m->timestampBits) - 1;
            const uint64_t ticks = ((t[1] & mask) - (t[0] & mask)) & mask;
            m->lastSeconds = double(ticks) * m->timestampPeriodNs * 1e-9;
        }
    }
    return Status::ok();
}

bool GpuContext::hasTimestamps() const {
    return m->timestampBits != 0;
}

double GpuContext::lastSubmitDeviceSeconds() const {
    return m->lastSeconds;
}

} // namespace coli::gpu
