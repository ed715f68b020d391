#include "gpu/cpu_expert.h"

#include "quant/matmul.h"
#include "quant/shared_math.h"

#include <vector>

namespace coli::gpu {

Status cpuExpert(const ExpertShape& s, const uint8_t* gate, const uint8_t* up, const uint8_t* down,
                 const int8_t* xq, const float* xs, float* y) {
    const int gG = quant::formatInfo(s.gateUp).groupSize, dG = quant::formatInfo(s.down).groupSize;
    const quant::QuantisedActivations x{xq, xs, 1, s.dModel, gG};
    std::vector<float> g(size_t(s.ffn)), u(size_t(s.ffn));
    COLI_RETURN_IF_ERROR(
        quant::quantMatmulRows(s.gateUp, gate, s.ffn, s.dModel, x, g.data(), 0, s.ffn));
    COLI_RETURN_IF_ERROR(
        quant::quantMatmulRows(s.gateUp, up, s.ffn, s.dModel, x, u.data(), 0, s.ffn));
    for (int i = 0; i < s.ffn; ++i)
        g[size_t(i)] = quant::siluShared(g[size_t(i)]) * u[size_t(i)];
    std::vector<int8_t> hq(size_t(s.ffn));
    std::vector<float> hs(size_t(s.ffn / dG));
    COLI_RETURN_IF_ERROR(quant::quantiseActivationRow(g.data(), s.ffn, dG, hq.data(), hs.data()));
    const quant::QuantisedActivations h{hq.data(), hs.data(), 1, s.ffn, dG};
    return quant::quantMatmulRows(s.down, down, s.dModel, s.ffn, h, y, 0, s.dModel);
}

} // namespace coli::gpu
