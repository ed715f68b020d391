// Model::residentWeightReadBandwidth: the memory read bandwidth of the model's own weights
// (model.h). The loop is placement::streamRead's (64-bit sums, static contiguous shares), run on
// the buffers a decode step reads instead of on a fresh one: on a VM, memory taken at another
// moment can sit on other host memory and stream at another speed (docs/performance.md).
#include "forward/model_impl.h"
#include "placement/memory_bandwidth.h"

#include <span>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace coli {

namespace {

void addMatrix(std::vector<std::span<const uint64_t>>& out, const Matrix& m) {
    const uint8_t* p = m.quantised() ? m.q.data() : reinterpret_cast<const uint8_t*>(m.data.data());
    const size_t bytes = m.quantised() ? m.q.size() : m.data.size() * sizeof(float);
    // Whole 64-bit words from the first 8-byte boundary (vectors are at least 8-byte aligned).
    if (bytes >= 8) out.emplace_back(reinterpret_cast<const uint64_t*>(p), bytes / 8);
}

std::vector<std::span<const uint64_t>> weightBuffers(const ModelImpl& m) {
    std::vector<std::span<const uint64_t>> out;
    for (size_t l = 0; l < m.w.layers.size(); ++l) {
        const LayerWeights& L = m.w.layers[l];
        for (const Matrix* x : {&L.q, &L.k, &L.v, &L.o, &L.qA, &L.qB, &L.kvA, &L.kvB, &L.router,
                                &L.sharedExpertGate, &L.dense.gate, &L.dense.up, &L.dense.down,
                                &L.shared.gate, &L.shared.up, &L.shared.down})
            addMatrix(out, *x);
        if (l < m.w.experts.size())
            for (const SwiGluWeights& e : m.w.experts[l])
                for (const Matrix* x : {&e.gate, &e.up, &e.down})
                    addMatrix(out, *x);
    }
    addMatrix(out, m.w.outputMatrix());
    return out;
}

// One pass: every thread sums its contiguous share of every buffer, in one parallel region.
uint64_t readPass(const std::vector<std::span<const uint64_t>>& buffers, int threads) {
    uint64_t sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
        int id = 0, size = 1;
#ifdef _OPENMP
        id = omp_get_thread_num();
        size = omp_get_num_threads();
#endif
        for (const std::span<const uint64_t>& b : buffers) {
            const size_t n = b.size();
            const size_t i0 = n * size_t(id) / size_t(size), i1 = n * size_t(id + 1) / size_t(size);
            for (size_t i = i0; i < i1; ++i)
                sum += b[i];
        }
    }
    return sum;
}

} // namespace

Result<placement::MemoryBandwidth> residentWeightReadBandwidthOf(const ModelImpl& m,
                                                                 int repetitions) {
    if (repetitions < 1 || repetitions > 1000)
        return Status(ErrorCode::InvalidArgument,
                      "weight read bandwidth: repetitions must be 1 to 1000 (got " +
                          std::to_string(repetitions) + ")");
    const std::vector<std::span<const uint64_t>> buffers = weightBuffers(m);
    size_t bytes = 0;
    for (const auto& b : buffers)
        bytes += b.size() * sizeof(uint64_t);
    if (bytes == 0) return placement::MemoryBandwidth{};
    placement::MemoryBandwidth out =
        placement::timeReadPasses(bytes, repetitions, [&] { return readPass(buffers, m.threads); });
    out.threads = m.threads;
    return out;
}

} // namespace coli
