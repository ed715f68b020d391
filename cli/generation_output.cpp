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
    fmt::print(stderr, "stop reason:      {}\n", stopReasonName(s.stopReason));
}

void printTurnStats(const GenerateStats& s) {
    fmt::print(stderr,
               "[{} prompt tokens ({} reused), {} tokens, ttft {:.1f} ms, {:.1f} tok/s, "
               "stop: {}]\n",
               s.promptTokens, s.reusedTokens, s.generatedTokens, s.ttftSeconds * 1e3,
               s.decodeTokensPerSecond, stopReasonName(s.stopReason));
}

} // namespace coli::cli
