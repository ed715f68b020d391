#pragma once
// The Atlas's affinity graph: which routed experts the router treats alike, measured from routing
// data (issue 12; formulas and sources in docs/visualisation.md, "Atlas embedding").
//
// Experts are indexed layer * n_experts + expert over the model's decoder layers, as
// coli::tiers::ExpertMap does (engine/tiers/tier_telemetry.h); rows of dense layers simply carry
// no routing and end up isolated.
//
// Two measured signals, combined per pair (i, j):
//   topic similarity  s_ij = max(0, cos(z_i, z_j)), z_i[t] = share_i[t] / b_i - 1, where
//                     b_i = mean over topics of share_i[t] (the balanced share). z_i is the
//                     expert's topic profile relative to its own balanced share, so a busy and a
//                     quiet expert of the same topic look alike; cos of the centred profiles is
//                     the Pearson correlation of the two share vectors over topics.
//   co-activation     c_ij = count_ij / sqrt(n_i * n_j): the cosine (Ochiai) similarity of the two
//                     experts' token sets when each is routed at most once per token and layer.
//   affinity          w_ij = kTopicWeight * s_ij + (1 - kTopicWeight) * c_ij, in [0, 1].
// Each expert keeps its kNeighbours largest w_ij (j != i, w_ij > 0; ties: the lower j first) and
// the graph is the union of those lists, symmetrised (w_ij = w_ji bit for bit, since both are
// computed with the same operations in the same order).
//
// Cost: O(n^2 * n_topics) time computed row by row (never an n x n matrix), O(n * n_topics +
// n_coactivation_pairs + n * kNeighbours) memory. Single-threaded and deterministic: the same
// input gives the same bytes.
#include "engine/core/status.h"

#include <cstdint>
#include <vector>

namespace coli::viz {

inline constexpr int kNeighbours = 12;      // neighbours kept per expert before symmetrising
inline constexpr double kTopicWeight = 0.5; // weight of the topic similarity in w_ij

// Counts of two experts routed for the same token: in one layer's top-k, or in consecutive MoE
// layers. Each unordered pair appears once (a < b); counts are tokens.
struct CoactivationPair {
    int32_t a = 0, b = 0;
    uint32_t count = 0;
};

struct RoutingProfile {
    int nExperts = 0; // n: all routed experts of the model (n_layers * n_experts_per_layer)
    int nTopics = 0;  // T
    // [n, T] row-major: share_t of expert i = routed slots of i in topic t / (tokens_t * top_k),
    // each in [0, 1].
    std::vector<double> shares;
    // [n]: tokens for which expert i was routed over all topics (n_i above).
    std::vector<uint64_t> routed;
    std::vector<CoactivationPair> coactivation; // sparse; pairs absent count 0
};

// Symmetric sparse graph in compressed rows: the neighbours of i are col[rowStart[i] ..
// rowStart[i + 1]) in increasing order, with weights in (0, 1]. No self loops.
struct AffinityGraph {
    int n = 0;
    std::vector<int64_t> rowStart; // [n + 1]
    std::vector<int32_t> col;      // [nnz]
    std::vector<double> weight;    // [nnz]
    int64_t nnz() const { return int64_t(col.size()); }
};

// Builds the graph. Errors (InvalidArgument, naming the field): sizes that do not match nExperts
// and nTopics, n < 1 or T < 1, a share outside [0, 1] or not finite, a pair index outside
// [0, n) or a == b, a pair listed twice, or a pair count above min(n_a, n_b).
// Thread-safety: a pure function; concurrent calls are safe.
Result<AffinityGraph> buildAffinity(const RoutingProfile& profile, int neighbours = kNeighbours);

} // namespace coli::viz
