#include "viz/specialists.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

namespace coli::viz {
namespace {

Status invalid(const std::string& what) {
    return {ErrorCode::InvalidArgument, "specialists: " + what};
}

// Squared Euclidean distance of points a and b of xyz ([n, 3]).
double squaredDistance3(std::span<const double> xyz, size_t a, size_t b) {
    double dist = 0;
    for (size_t c = 0; c < 3; ++c) {
        const double diff = xyz[a * 3 + c] - xyz[b * 3 + c];
        dist += diff * diff;
    }
    return dist;
}

} // namespace

double routingShare(int64_t slots, int64_t tokens, int topK) {
    return tokens <= 0 ? 0.0 : double(slots) / (double(tokens) * topK);
}

double balancedShare(std::span<const double> shares) {
    if (shares.empty()) return 0.0;
    double sum = 0;
    for (double s : shares)
        sum += s;
    return sum / double(shares.size());
}

bool isSpecialistShare(double share, double balanced) {
    return balanced >= kSpecialistMinBalanced && share >= kSpecialistRatio * balanced;
}

ExpertLabel labelExpert(std::span<const double> shares) {
    ExpertLabel l;
    l.balanced = balancedShare(shares);
    if (l.balanced <= 0) return l;
    // balanced is the same for every topic, so the largest ratio is the largest share.
    const auto top = std::max_element(shares.begin(), shares.end());
    l.topTopic = int(top - shares.begin());
    l.topRatio = *top / l.balanced;
    if (isSpecialistShare(*top, l.balanced)) l.dominant = l.topTopic;
    return l;
}

Result<std::vector<ExpertLabel>> labelExperts(std::span<const double> shares, int nExperts,
                                              int nTopics) {
    if (nExperts < 1 || nTopics < 1 || shares.size() != size_t(nExperts) * size_t(nTopics))
        return invalid(std::to_string(shares.size()) + " shares for " + std::to_string(nExperts) +
                       " experts x " + std::to_string(nTopics) + " topics");
    std::vector<ExpertLabel> out(static_cast<size_t>(nExperts));
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = labelExpert(shares.subspan(i * size_t(nTopics), size_t(nTopics)));
    return out;
}

namespace {

struct Pooled {
    std::vector<int64_t> tokens; // [T]
    std::vector<int64_t> slots;  // [n, T]
};

Result<Pooled> pool(const PromptRouting& r) {
    if (r.nExperts < 1 || r.nTopics < 1 || r.topK < 1)
        return invalid("needs at least one expert, one topic and top_k >= 1 (got " +
                       std::to_string(r.nExperts) + ", " + std::to_string(r.nTopics) + ", " +
                       std::to_string(r.topK) + ")");
    const size_t P = r.topic.size(), n = size_t(r.nExperts), T = size_t(r.nTopics);
    if (r.tokens.size() != P || r.routedSlots.size() != P * n)
        return invalid("per-prompt arrays do not match: " + std::to_string(P) + " topics, " +
                       std::to_string(r.tokens.size()) + " token counts, " +
                       std::to_string(r.routedSlots.size()) + " slot counts for " +
                       std::to_string(n) + " experts");
    Pooled p;
    p.tokens.assign(T, 0);
    p.slots.assign(n * T, 0);
    for (size_t q = 0; q < P; ++q) {
        if (r.topic[q] < 0 || r.topic[q] >= r.nTopics)
            return invalid("prompt " + std::to_string(q) + " has topic " +
                           std::to_string(r.topic[q]) + ", outside [0, " + std::to_string(T) + ")");
        if (r.tokens[q] < 0)
            return invalid("prompt " + std::to_string(q) + " has a negative token count");
        const size_t t = size_t(r.topic[q]);
        p.tokens[t] += r.tokens[q];
        for (size_t i = 0; i < n; ++i) {
            const uint32_t s = r.routedSlots[q * n + i];
            if (int64_t(s) > r.tokens[q])
                return invalid("prompt " + std::to_string(q) + " routes expert " +
                               std::to_string(i) + " " + std::to_string(s) + " times in " +
                               std::to_string(r.tokens[q]) + " tokens");
            p.slots[i * T + t] += s;
        }
    }
    return p;
}

} // namespace

Result<std::vector<double>> topicShares(const PromptRouting& r) {
    auto p = pool(r);
    if (!p) return p.status();
    const size_t n = size_t(r.nExperts), T = size_t(r.nTopics);
    std::vector<double> shares(n * T);
    for (size_t i = 0; i < n; ++i)
        for (size_t t = 0; t < T; ++t)
            shares[i * T + t] = routingShare(p->slots[i * T + t], p->tokens[t], r.topK);
    return shares;
}

Result<LooAgreement> leaveOnePromptOut(const PromptRouting& r) {
    auto p = pool(r);
    if (!p) return p.status();
    const size_t P = r.topic.size(), n = size_t(r.nExperts), T = size_t(r.nTopics);
    std::vector<double> row(T);
    auto sharesOf = [&](size_t i, size_t heldTopic, size_t held) {
        for (size_t t = 0; t < T; ++t) {
            int64_t slots = p->slots[i * T + t], tokens = p->tokens[t];
            if (held < P && t == heldTopic)
                slots -= r.routedSlots[held * n + i], tokens -= r.tokens[held];
            row[t] = routingShare(slots, tokens, r.topK);
        }
        return labelExpert(row).dominant;
    };

    LooAgreement a;
    a.specialists.assign(T, 0);
    a.perTopic.assign(T, 0.0);
    std::vector<int64_t> agreedByTopic(T, 0);
    for (size_t i = 0; i < n; ++i) {
        const int full = sharesOf(i, 0, P);
        if (full == kGeneralist) continue;
        ++a.specialists[size_t(full)];
        for (size_t q = 0; q < P; ++q) {
            const bool same = sharesOf(i, size_t(r.topic[q]), q) == full;
            a.agreed += same;
            agreedByTopic[size_t(full)] += same;
            ++a.cases;
        }
    }
    a.overall = a.cases ? double(a.agreed) / double(a.cases) : 0.0;
    for (size_t t = 0; t < T; ++t)
        if (a.specialists[t] && P)
            a.perTopic[t] = double(agreedByTopic[t]) / (double(a.specialists[t]) * double(P));
    return a;
}

namespace {

// Per-topic means of a k-nearest-neighbour purity: for each specialist a (dominant[a] a topic),
// the fraction of its k nearest `candidates` other than a (Euclidean in 3D; ties: the lower
// index) whose neighbourLabel is dominant[a]. Callers check k <= candidates.size() - 1.
struct KnnPurity {
    double overall = 0;           // mean over specialists
    std::vector<double> perTopic; // [T]: mean over topic t's specialists (0 when it has none)
    size_t specialists = 0;
};
KnnPurity knnPurity(std::span<const double> xyz, std::span<const int> dominant,
                    std::span<const size_t> candidates, std::span<const int> neighbourLabel,
                    size_t T, int k) {
    KnnPurity out;
    out.perTopic.assign(T, 0.0);
    std::vector<int> count(T, 0);
    std::vector<std::pair<double, size_t>> d;
    d.reserve(candidates.size());
    for (size_t a = 0; a < dominant.size(); ++a) {
        const int t = dominant[a];
        if (t == kGeneralist) continue;
        d.clear();
        for (size_t b : candidates)
            if (b != a) d.push_back({squaredDistance3(xyz, a, b), b});
        std::partial_sort(d.begin(), d.begin() + k, d.end());
        int same = 0;
        for (int j = 0; j < k; ++j)
            same += neighbourLabel[d[size_t(j)].second] == t;
        const double purity = double(same) / double(k);
        out.overall += purity;
        out.perTopic[size_t(t)] += purity;
        ++count[size_t(t)];
        ++out.specialists;
    }
    if (out.specialists) out.overall /= double(out.specialists);
    for (size_t t = 0; t < T; ++t)
        if (count[t]) out.perTopic[t] /= double(count[t]);
    return out;
}

// InvalidArgument naming the first label outside kGeneralist or [0, nTopics), else OK.
Status checkLabels(std::span<const int> labels, int nTopics) {
    for (size_t i = 0; i < labels.size(); ++i)
        if (labels[i] != kGeneralist && (labels[i] < 0 || labels[i] >= nTopics))
            return invalid("expert " + std::to_string(i) + " has label " +
                           std::to_string(labels[i]) + ", outside [0, " + std::to_string(nTopics) +
                           ")");
    return {};
}

} // namespace

Result<TopicPurity> topicPurity(std::span<const double> xyz, std::span<const int> dominant,
                                int nTopics, int k) {
    if (xyz.size() != dominant.size() * 3)
        return invalid(std::to_string(xyz.size()) + " coordinates for " +
                       std::to_string(dominant.size()) + " experts (3 each expected)");
    if (k < 1 || nTopics < 1) return invalid("k and the number of topics must be at least 1");
    COLI_RETURN_IF_ERROR(checkLabels(dominant, nTopics));
    std::vector<size_t> spec;
    for (size_t i = 0; i < dominant.size(); ++i)
        if (dominant[i] != kGeneralist) spec.push_back(i);
    if (spec.size() < size_t(k) + 1)
        return invalid("the purity over " + std::to_string(k) + " neighbours needs at least " +
                       std::to_string(k + 1) + " specialists, there are " +
                       std::to_string(spec.size()));
    KnnPurity p = knnPurity(xyz, dominant, spec, dominant, size_t(nTopics), k);
    TopicPurity out;
    out.overall = p.overall;
    out.perTopic = std::move(p.perTopic);
    return out;
}

Result<NeighbourhoodPurity> neighbourhoodPurity(std::span<const double> xyz,
                                                std::span<const int> dominant,
                                                std::span<const int> leaning, int nTopics, int k) {
    const size_t n = dominant.size();
    if (xyz.size() != n * 3 || leaning.size() != n)
        return invalid(std::to_string(xyz.size()) + " coordinates and " +
                       std::to_string(leaning.size()) + " leanings for " + std::to_string(n) +
                       " experts (3 and 1 each expected)");
    if (k < 1 || nTopics < 1) return invalid("k and the number of topics must be at least 1");
    if (n < size_t(k) + 1)
        return invalid("the purity over " + std::to_string(k) + " neighbours needs at least " +
                       std::to_string(k + 1) + " experts, there are " + std::to_string(n));
    COLI_RETURN_IF_ERROR(checkLabels(dominant, nTopics));
    COLI_RETURN_IF_ERROR(checkLabels(leaning, nTopics));
    const size_t T = size_t(nTopics);
    std::vector<int> leaningCount(T, 0), specialistCount(T, 0);
    for (size_t i = 0; i < n; ++i) {
        if (leaning[i] != kGeneralist) ++leaningCount[size_t(leaning[i])];
        if (dominant[i] != kGeneralist) ++specialistCount[size_t(dominant[i])];
    }
    std::vector<size_t> everyone(n);
    std::iota(everyone.begin(), everyone.end(), size_t(0));
    KnnPurity p = knnPurity(xyz, dominant, everyone, leaning, T, k);
    if (p.specialists == 0) return invalid("no expert is a specialist: the purity is undefined");
    NeighbourhoodPurity out;
    out.overall = p.overall;
    out.perTopic = std::move(p.perTopic);
    for (size_t a = 0; a < n; ++a) {
        const int t = dominant[a];
        if (t == kGeneralist) continue;
        // Among the n - 1 others, those leaning to t (a itself leans to t: it is its top topic).
        out.chance += double(leaningCount[size_t(t)] - (leaning[a] == t)) / double(n - 1);
        out.specialistsCap += double(std::min(k, specialistCount[size_t(t)] - 1)) / double(k);
    }
    out.chance /= double(p.specialists);
    out.specialistsCap /= double(p.specialists);
    return out;
}

} // namespace coli::viz
