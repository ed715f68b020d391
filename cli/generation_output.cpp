#include "generation_output.h"

#include <fmt/core.h>

#include <cstdio>

namespace coli::cli {

void PieceWriter::operator()(std::string_view piece) {
    if (piece.empty()) return;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    m_text.append(piece);
    m_wrote = true;
    m_endsWithNewline = piece.back() == '\n';
}

void PieceWriter::clear() {
    m_endsWithNewline = true;
    m_wrote = false;
    m_text.clear();
}

void printStats(const GenerateStats& s, const std::string& sampling) {
    fmt::print(stderr, "sampling:         {}\n", sampling);
    fmt::print(stderr, "prompt tokens:    {} ({} reused from cache)\n", s.promptTokens,
               s.reusedTokens);
    fmt::print(stderr, "generated tokens: {}\n", s.generatedTokens);
    fmt::print(stderr, "ttft:             {:.1f} ms\n", s.ttftSeconds * 1e3);
    fmt::print(stderr, "prefill:          {:.1f} tok/s ({} tokens in {:.1f} ms)\n",
               s.prefillTokensPerSecond, s.promptTokens - s.reusedTokens, s.prefillSeconds * 1e3);
    fmt::print(stderr, "decode:           {:.1f} tok/s ({} tokens in {:.1f} ms)\n",
               s.decodeTokensPerSecond, s.generatedTokens > 0 ? s.generatedTokens - 1 : 0,
               s.decodeSeconds * 1e3);
    fmt::print(stderr, "time:             {}\n", describeTimeSplit(s));
    fmt::print(stderr, "stop reason:      {}\n", stopReasonName(s.stopReason));
}

std::string describeTimeSplit(const GenerateStats& s) {
    const TimeSplit& t = s.time;
    auto pct = [&](double part) { return 100.0 * t.share(part); };
    return fmt::format("attention {:.0f}% \u00b7 expert FFN {:.0f}% \u00b7 expert wait {:.0f}% "
                       "\u00b7 sampling {:.0f}% \u00b7 other {:.0f}% of {:.1f} ms",
                       pct(t.attention), pct(t.expertFfn), pct(t.expertWait), pct(t.sampling),
                       pct(t.other), t.total() * 1e3);
}

std::string describeGpu(const GpuCounters& before, const GpuCounters& after) {
    return fmt::format("gpu: {} experts computed in VRAM ({} token jobs, {} flagged and "
                       "recomputed on the CPU), {}/{} experts resident, {} evicted, {:.1f} MiB "
                       "uploaded, {:.1f} ms on the device, {:.1f} ms waiting for it",
                       after.experts - before.experts, after.jobs - before.jobs,
                       after.flagged - before.flagged, after.resident, after.capacity,
                       after.evictions - before.evictions,
                       double(after.uploadedBytes - before.uploadedBytes) / 1048576.0,
                       (after.deviceSeconds - before.deviceSeconds) * 1e3,
                       (after.waitSeconds - before.waitSeconds) * 1e3);
}

void printTurnStats(const GenerateStats& s) {
    fmt::print(stderr,
               "[{} prompt tokens ({} reused), {} tokens, ttft {:.1f} ms, {:.1f} tok/s, "
               "stop: {}]\n",
               s.promptTokens, s.reusedTokens, s.generatedTokens, s.ttftSeconds * 1e3,
               s.decodeTokensPerSecond, stopReasonName(s.stopReason));
}

} // namespace coli::cli
