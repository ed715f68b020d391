#pragma once
// Specialist experts: the one definition `coli route-stats`, `coli atlas` and the Atlas share
// (issue 3's criterion, issue 12), and the two figures that say whether the topic labels are real:
// leave-one-prompt-out agreement and the k-nearest-neighbour topic purity in the 3D embedding.
// Formulas in docs/visualisation.md, "Atlas embedding".
//
// For expert i and topic t: share_t = routed slots of i in t / (tokens_t * top_k) (a slot is one
// of a token's top-k choices, so a layer's shares sum to 1 per topic). balanced = mean over topics
// of share_t: the share on a topic-balanced mix, so a topic with more text does not dominate.
// i is a specialist of t when share_t >= kSpecialistRatio x balanced and balanced >=
// kSpecialistMinBalanced. Its dominant topic is the topic of largest share_t / balanced (the
// lowest index on ties): its label when it is a specialist, kGeneralist otherwise.
//
// Thread-safety: pure functions; concurrent calls are safe.
#include "engine/core/status.h"

#include <cstdint>
#include <span>
#include <vector>

namespace coli::viz {

inline constexpr double kSpecialistRatio = 3.0;        // share in a topic vs balanced share
inline constexpr double kSpecialistMinBalanced = 0.01; // experts below this never specialise
inline constexpr int kGeneralist = -1;                 // the label of a non-specialist
inline constexpr int kPurityNeighbours = 5;            // k of the topic purity

// routedSlots / (tokens * topK); 0 when tokens is 0.
double routingShare(int64_t routedSlots, int64_t tokens, int topK);

// Mean of one expert's shares over the topics ([n_topics]); 0 for an empty span.
double balancedShare(std::span<const double> shares);

// Whether a share passes the specialist test against the expert's balanced share.
bool isSpecialistShare(double share, double balanced);

struct ExpertLabel {
    double balanced = 0;        // mean share over topics
    int topTopic = kGeneralist; // largest share / balanced; kGeneralist when balanced is 0
    double topRatio = 0;        // that topic's share / balanced (0 when balanced is 0)
    int dominant = kGeneralist; // topTopic for a specialist, kGeneralist otherwise
    bool specialist() const { return dominant != kGeneralist; }
};

// Labels one expert from its shares over the topics ([n_topics]).
ExpertLabel labelExpert(std::span<const double> shares);

// Labels every expert of shares ([n_experts, n_topics] row-major). Errors: InvalidArgument when
// the size is not nExperts * nTopics or either is below 1.
Result<std::vector<ExpertLabel>> labelExperts(std::span<const double> shares, int nExperts,
                                              int nTopics);

// Routed slots per prompt, the topic probe's raw counts.
struct PromptRouting {
    int nExperts = 0;            // n
    int nTopics = 0;             // T
    int topK = 0;                // routed experts per token and layer
    std::vector<int> topic;      // [n_prompts]: each prompt's topic in [0, T)
    std::vector<int64_t> tokens; // [n_prompts]: tokens routed (prefill) for the prompt
    std::vector<uint32_t>
        routedSlots; // [n_prompts, n]: times each expert was routed for the prompt
};

// Shares [n, T] of all prompts pooled per topic. Errors: InvalidArgument for mismatched sizes, a
// topic out of range, negative tokens, a topK below 1 or more slots than tokens * topK.
Result<std::vector<double>> topicShares(const PromptRouting& r);

// Leave-one-prompt-out agreement (a jackknife over prompts): is each specialist's label carried by
// the data as a whole rather than by one prompt? For every specialist s of the full data (dominant
// topic d_s) and every prompt p, the labels are recomputed from all prompts but p (p's slots and
// tokens removed from its topic); the case (s, p) agrees when s is still a specialist with
// dominant topic d_s. agreement = agreeing cases / all cases, in [0, 1].
struct LooAgreement {
    int64_t cases = 0, agreed = 0;
    double overall = 0;           // agreed / cases (0 when there is no specialist)
    std::vector<int> specialists; // [T]: specialists per dominant topic (full data)
    std::vector<double> perTopic; // [T]: the agreement of topic t's specialists (0: none)
};
// Errors: those of topicShares.
Result<LooAgreement> leaveOnePromptOut(const PromptRouting& r);

// k-nearest-neighbour topic purity of the specialists in the embedding: for each specialist, the
// fraction of its k nearest other specialists (Euclidean in 3D; ties: the lower index) that share
// its dominant topic, averaged over specialists (overall) and per dominant topic.
struct TopicPurity {
    double overall = 0;
    std::vector<double> perTopic; // [T]: mean over topic t's specialists (0 when it has none)
};
// xyz: [n, 3] positions; dominant: [n] labels (kGeneralist or a topic in [0, nTopics)).
// Errors: InvalidArgument for mismatched sizes, a label out of range, k < 1, or fewer than k + 1
// specialists (the message says how many there are).
Result<TopicPurity> topicPurity(std::span<const double> xyz, std::span<const int> dominant,
                                int nTopics, int k = kPurityNeighbours);

// The k-nearest-neighbour topic purity of the specialists among ALL experts, the Atlas's headline
// figure: for each specialist s (dominant topic d_s), the fraction of its k nearest other experts
// (Euclidean in 3D; ties: the lower index) whose leaning topic (ExpertLabel::topTopic: the topic of
// largest share / balanced, specialist or not) is d_s; averaged over specialists and per topic.
// Why among all experts: a model with few specialists per topic caps topicPurity() (a specialist
// of a topic with m specialists has at most m - 1 same-topic specialists to find), whatever the
// embedding; the question "does the galaxy put a specialist among experts that lean its way" has
// no such cap. `chance` is the same figure for a random placement (each specialist's expected
// share of same-leaning experts among the others), for comparison. `cap` is topicPurity()'s upper
// bound for these labels: mean over specialists of min(k, m_t - 1) / k.
struct NeighbourhoodPurity {
    double overall = 0;
    double chance = 0;
    double specialistsCap = 0;
    std::vector<double> perTopic; // [T]: mean over topic t's specialists (0 when it has none)
};
// xyz: [n, 3]; dominant, leaning: [n] (kGeneralist or a topic in [0, nTopics); a generalist's
// leaning may be a topic). Errors: InvalidArgument for mismatched sizes, a label out of range,
// k < 1, no specialist, or fewer than k + 1 experts.
Result<NeighbourhoodPurity> neighbourhoodPurity(std::span<const double> xyz,
                                                std::span<const int> dominant,
                                                std::span<const int> leaning, int nTopics,
                                                int k = kPurityNeighbours);

} // namespace coli::viz
