#include "viz/affinity.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

namespace coli::viz {
namespace {

Status invalid(const std::string& what) {
    return {ErrorCode::InvalidArgument, "Atlas affinity: " + what};
}

Status validate(const RoutingProfile& p) {
    if (p.nExperts < 1)
        return invalid("no experts (n_experts = " + std::to_string(p.nExperts) + ")");
    if (p.nTopics < 1) return invalid("no topics (n_topics = " + std::to_string(p.nTopics) + ")");
    const size_t n = size_t(p.nExperts), t = size_t(p.nTopics);
    if (p.shares.size() != n * t)
        return invalid("shares has " + std::to_string(p.shares.size()) + " values, expected " +
                       std::to_string(n) + " experts x " + std::to_string(t) + " topics");
    if (p.routed.size() != n)
        return invalid("routed has " + std::to_string(p.routed.size()) + " values, expected " +
                       std::to_string(n));
    for (size_t i = 0; i < p.shares.size(); ++i)
        if (!(p.shares[i] >= 0.0 && p.shares[i] <= 1.0))
            return invalid("share of expert " + std::to_string(i / t) + " in topic " +
                           std::to_string(i % t) + " is outside [0, 1]");
    for (const CoactivationPair& c : p.coactivation) {
        if (c.a < 0 || c.b < 0 || c.a >= p.nExperts || c.b >= p.nExperts || c.a == c.b)
            return invalid("co-activation pair (" + std::to_string(c.a) + ", " +
                           std::to_string(c.b) + ") is not two distinct experts in [0, " +
                           std::to_string(n) + ")");
        if (c.count > std::min(p.routed[size_t(c.a)], p.routed[size_t(c.b)]))
            return invalid("co-activation pair (" + std::to_string(c.a) + ", " +
                           std::to_string(c.b) + ") counts " + std::to_string(c.count) +
                           " tokens, more than one of the two experts was routed for");
    }
    return Status::ok();
}

struct Entry {
    int32_t row, col;
    double value;
};

// Co-activation c_ij = count / sqrt(n_i n_j) in both directions, sorted by (row, col).
Result<std::vector<Entry>> coactivationRows(const RoutingProfile& p) {
    std::vector<Entry> e;
    e.reserve(p.coactivation.size() * 2);
    for (const CoactivationPair& c : p.coactivation) {
        if (c.count == 0) continue;
        const double v = double(c.count) /
                         std::sqrt(double(p.routed[size_t(c.a)]) * double(p.routed[size_t(c.b)]));
        e.push_back({c.a, c.b, v});
        e.push_back({c.b, c.a, v});
    }
    std::sort(e.begin(), e.end(), [](const Entry& x, const Entry& y) {
        return std::tie(x.row, x.col) < std::tie(y.row, y.col);
    });
    for (size_t i = 1; i < e.size(); ++i)
        if (e[i].row == e[i - 1].row && e[i].col == e[i - 1].col)
            return invalid("co-activation pair (" + std::to_string(std::min(e[i].row, e[i].col)) +
                           ", " + std::to_string(std::max(e[i].row, e[i].col)) +
                           ") is listed twice");
    return e;
}

// zt[t * n + i] = z_i[t] / |z_i|: the centred topic profile, unit length (zero when the expert was
// never routed or routes evenly over all topics).
std::vector<double> profilesByTopic(const RoutingProfile& p) {
    const size_t n = size_t(p.nExperts), T = size_t(p.nTopics);
    std::vector<double> zt(n * T, 0.0);
    std::vector<double> z(T);
    for (size_t i = 0; i < n; ++i) {
        const double* s = &p.shares[i * T];
        double balanced = 0;
        for (size_t t = 0; t < T; ++t)
            balanced += s[t];
        balanced /= double(T);
        if (balanced <= 0) continue;
        double norm2 = 0;
        for (size_t t = 0; t < T; ++t) {
            z[t] = s[t] / balanced - 1.0;
            norm2 += z[t] * z[t];
        }
        if (norm2 <= 0) continue;
        const double inv = 1.0 / std::sqrt(norm2);
        for (size_t t = 0; t < T; ++t)
            zt[t * n + i] = z[t] * inv;
    }
    return zt;
}

struct Neighbour {
    double w;
    int32_t j;
};

} // namespace

Result<AffinityGraph> buildAffinity(const RoutingProfile& p, int neighbours) {
    COLI_RETURN_IF_ERROR(validate(p));
    if (neighbours < 1)
        return invalid("neighbours per expert must be at least 1, not " +
                       std::to_string(neighbours));
    auto coact = coactivationRows(p);
    if (!coact) return coact.status();
    const std::vector<Entry>& ce = coact.value();
    const size_t n = size_t(p.nExperts), T = size_t(p.nTopics);
    const std::vector<double> zt = profilesByTopic(p);
    const size_t keep = std::min(size_t(neighbours), n - 1);

    // Row by row: all n affinities of expert i, then its `keep` largest. The dot products run over
    // topics in the same order for (i, j) and (j, i), so w_ij == w_ji exactly.
    std::vector<double> acc(n);
    std::vector<Neighbour> best;
    std::vector<std::pair<int32_t, int32_t>> edges; // (i, j) both ways, before deduplication
    edges.reserve(n * keep * 2);
    std::vector<double> edgeWeight; // parallel to the (i < j) half, looked up after sorting
    size_t ci = 0;
    for (size_t i = 0; i < n; ++i) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (size_t t = 0; t < T; ++t) {
            const double zi = zt[t * n + i];
            if (zi == 0.0) continue; // skipping adds of exact zeros leaves every sum unchanged
            const double* row = &zt[t * n];
            for (size_t j = 0; j < n; ++j)
                acc[j] += zi * row[j];
        }
        for (size_t j = 0; j < n; ++j)
            acc[j] = kTopicWeight * std::max(0.0, acc[j]);
        for (; ci < ce.size() && size_t(ce[ci].row) == i; ++ci)
            acc[size_t(ce[ci].col)] += (1.0 - kTopicWeight) * ce[ci].value;
        acc[i] = 0.0;

        // The `keep` largest in a small sorted list (weight descending, then index ascending);
        // scanning j upwards with a strict comparison keeps the lower index on ties.
        best.clear();
        for (size_t j = 0; j < n; ++j) {
            const double w = acc[j];
            if (w <= 0.0 || (best.size() == keep && w <= best.back().w)) continue;
            if (best.size() == keep) best.pop_back();
            auto at = std::upper_bound(best.begin(), best.end(), w,
                                       [](double v, const Neighbour& b) { return v > b.w; });
            best.insert(at, {w, int32_t(j)});
        }
        for (const Neighbour& b : best) {
            edges.push_back({int32_t(i), b.j});
            edges.push_back({b.j, int32_t(i)});
            edgeWeight.push_back(b.w);
        }
    }

    // Weights by edge: every kept (i, j) stored its w; w_ij == w_ji, so either direction's value
    // is the edge's weight.
    std::vector<std::tuple<int32_t, int32_t, double>> all;
    all.reserve(edges.size());
    for (size_t k = 0; k < edges.size(); ++k)
        all.emplace_back(edges[k].first, edges[k].second, edgeWeight[k / 2]);
    edges.clear();
    edges.shrink_to_fit();
    std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) {
        return std::tie(std::get<0>(x), std::get<1>(x)) < std::tie(std::get<0>(y), std::get<1>(y));
    });
    all.erase(std::unique(all.begin(), all.end(),
                          [](const auto& x, const auto& y) {
                              return std::get<0>(x) == std::get<0>(y) &&
                                     std::get<1>(x) == std::get<1>(y);
                          }),
              all.end());

    AffinityGraph g;
    g.n = int(n);
    g.rowStart.assign(n + 1, 0);
    g.col.reserve(all.size());
    g.weight.reserve(all.size());
    for (const auto& [r, c, w] : all) {
        ++g.rowStart[size_t(r) + 1];
        g.col.push_back(c);
        g.weight.push_back(w);
    }
    for (size_t i = 0; i < n; ++i)
        g.rowStart[i + 1] += g.rowStart[i];
    return g;
}

} // namespace coli::viz
