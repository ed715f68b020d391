#include "viz/embedding.h"

#include <Spectra/SymEigsSolver.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <string>

namespace coli::viz {
namespace {

constexpr int kAxes = 3;
// M's known top eigenvector u1 is shifted from eigenvalue 1 to 1 - kDeflate = -2, below M's
// spectrum [-1, 1], so the largest three of the deflated operator are v_2..v_4.
constexpr double kDeflate = 3.0;

Status invalid(const std::string& what) {
    return {ErrorCode::InvalidArgument, "Atlas embedding: " + what};
}

Status validate(const AffinityGraph& g) {
    if (g.n < 5)
        return invalid("needs at least 5 experts to place in 3D, the graph has " +
                       std::to_string(g.n));
    if (g.rowStart.size() != size_t(g.n) + 1 || g.rowStart.front() != 0 ||
        g.rowStart.back() != g.nnz() || g.weight.size() != g.col.size())
        return invalid("the graph's row offsets and entries do not match");
    for (int i = 0; i < g.n; ++i) {
        if (g.rowStart[i] > g.rowStart[i + 1]) return invalid("row offsets decrease");
        for (int64_t k = g.rowStart[i]; k < g.rowStart[i + 1]; ++k) {
            const int32_t j = g.col[size_t(k)];
            const double w = g.weight[size_t(k)];
            auto pair = [&] {
                return std::string("(") + std::to_string(i) + ", " + std::to_string(j) + ")";
            };
            if (j < 0 || j >= g.n || j == i) return invalid("entry " + pair() + " is not an edge");
            if (k > g.rowStart[i] && j <= g.col[size_t(k - 1)])
                return invalid("row " + std::to_string(i) + " is not sorted by column");
            if (!(w >= 0.0) || !std::isfinite(w))
                return invalid("weight of " + pair() + " is negative or not finite");
            const auto b = g.col.begin() + g.rowStart[size_t(j)];
            const auto e = g.col.begin() + g.rowStart[size_t(j) + 1];
            const auto at = std::lower_bound(b, e, int32_t(i));
            if (at == e || *at != i || g.weight[size_t(at - g.col.begin())] != w)
                return invalid("weight of " + pair() +
                               " differs from its mirror: the graph is not "
                               "symmetric");
        }
    }
    return Status::ok();
}

// y = (M - kDeflate u1 u1^T) x with M = D^-1/2 (W + tau/n 1 1^T) D^-1/2, without storing M.
class DeflatedAffinity {
public:
    using Scalar = double;

    DeflatedAffinity(const AffinityGraph& g, double tau) : m_g(g), m_tau(tau) {
        const size_t n = size_t(g.n);
        m_dinv.resize(n);
        m_u1.resize(n);
        double norm2 = 0;
        for (size_t i = 0; i < n; ++i) {
            double deg = 0;
            for (int64_t k = g.rowStart[i]; k < g.rowStart[i + 1]; ++k)
                deg += g.weight[size_t(k)];
            deg += tau; // the uniform term's row sum: (tau / n) * n
            m_dinv[i] = 1.0 / std::sqrt(deg);
            m_u1[i] = std::sqrt(deg);
            norm2 += deg;
        }
        const double inv = 1.0 / std::sqrt(norm2);
        for (double& u : m_u1)
            u *= inv;
    }

    Eigen::Index rows() const { return m_g.n; }
    Eigen::Index cols() const { return m_g.n; }
    const std::vector<double>& dinv() const { return m_dinv; }

    void perform_op(const double* x, double* y) const {
        const size_t n = size_t(m_g.n);
        double uniform = 0, along = 0;
        for (size_t j = 0; j < n; ++j) {
            uniform += m_dinv[j] * x[j];
            along += m_u1[j] * x[j];
        }
        uniform *= m_tau / double(n);
        for (size_t i = 0; i < n; ++i) {
            double s = 0;
            for (int64_t k = m_g.rowStart[i]; k < m_g.rowStart[i + 1]; ++k) {
                const size_t j = size_t(m_g.col[size_t(k)]);
                s += m_g.weight[size_t(k)] * m_dinv[j] * x[j];
            }
            y[i] = m_dinv[i] * (s + uniform) - kDeflate * along * m_u1[i];
        }
    }

private:
    const AffinityGraph& m_g;
    double m_tau;
    std::vector<double> m_dinv, m_u1;
};

// A fixed start vector (splitmix64 of the index, uniform in [-1, 1)): deterministic, and with
// probability one not orthogonal to any eigenvector.
std::vector<double> startVector(size_t n) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) {
        uint64_t z = uint64_t(i) + 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        v[i] = double(z >> 11) * 0x1.0p-52 - 1.0;
    }
    return v;
}

} // namespace

Result<Embedding> embed3d(const AffinityGraph& g) {
    COLI_RETURN_IF_ERROR(validate(g));
    const size_t n = size_t(g.n);
    double total = 0;
    for (double w : g.weight)
        total += w;
    if (total <= 0)
        return invalid("the affinity graph has no edges: the routing data relates no two experts");
    const double tau = kRegularisation * total / double(n);

    DeflatedAffinity op(g, tau);
    const int ncv = std::min(kLanczosVectors, g.n);
    Embedding out;
    out.n = g.n;
    Eigen::MatrixXd vecs;
    try {
        Spectra::SymEigsSolver<DeflatedAffinity> eigs(op, kAxes, ncv);
        const std::vector<double> v0 = startVector(n);
        eigs.init(v0.data());
        const Eigen::Index nconv = eigs.compute(Spectra::SortRule::LargestAlge, kMaxIterations,
                                                kTolerance, Spectra::SortRule::LargestAlge);
        out.iterations = int(eigs.num_iterations());
        if (eigs.info() != Spectra::CompInfo::Successful || nconv < kAxes)
            return Status(ErrorCode::Numeric,
                          "Atlas embedding: the eigensolver (Lanczos) did not converge: " +
                              std::to_string(nconv) + " of 3 eigenvectors after " +
                              std::to_string(out.iterations) + " restarts on " + std::to_string(n) +
                              " experts");
        const Eigen::VectorXd vals = eigs.eigenvalues();
        vecs = eigs.eigenvectors();
        out.eigenvalue.assign(vals.data(), vals.data() + kAxes);
    } catch (const std::exception& e) {
        return Status(ErrorCode::Internal,
                      std::string("Atlas embedding: the eigensolver failed: ") + e.what());
    }

    // l_k f_k = l_k D^-1/2 v_k, signed so that its largest |component| (lowest index on ties) is
    // positive.
    out.xyz.assign(n * kAxes, 0.0);
    for (int a = 0; a < kAxes; ++a) {
        size_t top = 0;
        double topAbs = -1;
        for (size_t i = 0; i < n; ++i) {
            const double f = out.eigenvalue[size_t(a)] * (op.dinv()[i] * vecs(Eigen::Index(i), a));
            out.xyz[i * kAxes + size_t(a)] = f;
            if (std::fabs(f) > topAbs) topAbs = std::fabs(f), top = i;
        }
        if (out.xyz[top * kAxes + size_t(a)] < 0)
            for (size_t i = 0; i < n; ++i)
                out.xyz[i * kAxes + size_t(a)] = -out.xyz[i * kAxes + size_t(a)];
    }

    // Centre on the bounding box; one scale so the longest side spans [-1, 1].
    double lo[kAxes], hi[kAxes], extent = 0;
    for (int a = 0; a < kAxes; ++a) {
        lo[a] = hi[a] = out.xyz[size_t(a)];
        for (size_t i = 0; i < n; ++i) {
            lo[a] = std::min(lo[a], out.xyz[i * kAxes + size_t(a)]);
            hi[a] = std::max(hi[a], out.xyz[i * kAxes + size_t(a)]);
        }
        extent = std::max(extent, hi[a] - lo[a]);
    }
    const double scale = extent > 0 ? 2.0 / extent : 0.0;
    for (size_t i = 0; i < n; ++i)
        for (int a = 0; a < kAxes; ++a) {
            double& x = out.xyz[i * kAxes + size_t(a)];
            x = std::clamp((x - 0.5 * (lo[a] + hi[a])) * scale, -1.0, 1.0);
        }
    return out;
}

} // namespace coli::viz
