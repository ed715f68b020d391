#include "cachesim/access_sequence.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>

namespace coli::cachesim {
namespace {

bool sameShape(const RoutingTraceFile& a, const RoutingTraceFile& b) {
    return a.nLayers == b.nLayers && a.nExperts == b.nExperts && a.topK == b.topK &&
           a.moeLayers == b.moeLayers;
}

// Appends the groups of tokens [t0, t1) of `tr`, one step.
void addStep(const RoutingTraceFile& tr, int64_t t0, int64_t t1, AccessSequence& s,
             std::vector<int64_t>& seenInGroup) {
    for (int i = 0; i < tr.nMoeLayers(); ++i) {
        AccessSequence::Group g;
        g.accessBegin = uint32_t(s.accesses.size());
        g.routingBegin = uint32_t(s.routings.size());
        const int64_t groupId = int64_t(s.groups.size());
        for (int64_t t = t0; t < t1; ++t) {
            for (int32_t e : tr.expertsAt(t, i)) {
                const int32_t key = tr.moeLayers[size_t(i)] * tr.nExperts + e;
                s.routings.push_back(key);
                if (seenInGroup[size_t(key)] != groupId) {
                    seenInGroup[size_t(key)] = groupId;
                    s.accesses.push_back(key);
                }
            }
        }
        g.accessEnd = uint32_t(s.accesses.size());
        g.routingEnd = uint32_t(s.routings.size());
        s.groups.push_back(g);
    }
    s.groups.back().advanceAfter = t1 - t0;
    s.tokens += t1 - t0;
    ++s.steps;
}

} // namespace

Result<AccessSequence> buildAccessSequence(std::span<const RoutingTraceFile> traces, int chunk) {
    if (traces.empty()) return Status(ErrorCode::InvalidArgument, "no traces");
    if (chunk < 1)
        return Status(ErrorCode::InvalidArgument, fmt::format("chunk {} must be >= 1", chunk));
    const RoutingTraceFile& first = traces.front();
    uint64_t routings = 0;
    for (const auto& tr : traces) {
        if (!sameShape(first, tr))
            return Status(ErrorCode::InvalidArgument,
                          fmt::format("{} and {}: traces of different models (layers, experts, "
                                      "top_k or MoE layers differ)",
                                      first.name, tr.name));
        routings += uint64_t(tr.nTokens()) * uint64_t(tr.nMoeLayers()) * uint64_t(tr.topK);
    }
    if (routings > uint64_t(std::numeric_limits<uint32_t>::max() / 2))
        return Status(ErrorCode::Unsupported, "traces above 2^31 routings");

    AccessSequence s;
    s.nLayers = first.nLayers;
    s.nExperts = first.nExperts;
    s.moeLayers = first.moeLayers;
    s.topK = first.topK;
    s.routings.reserve(size_t(routings));
    std::vector<int64_t> seenInGroup(size_t(s.nLayers) * size_t(s.nExperts), -1);
    for (const auto& tr : traces) {
        int64_t t = 0;
        while (t < tr.nTokens()) {
            // A prompt chunk: up to `chunk` consecutive prompt tokens; a generated token alone.
            int64_t end = t + 1;
            if (!tr.generated[size_t(t)])
                while (end < tr.nTokens() && end - t < chunk && !tr.generated[size_t(end)])
                    ++end;
            addStep(tr, t, end, s, seenInGroup);
            t = end;
        }
    }
    return s;
}

} // namespace coli::cachesim
