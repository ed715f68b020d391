#include "token_replay.h"

#include "core/file_text.h"
#include "core/number_text.h"

#include <nlohmann/json.hpp>

#include <sstream>

namespace coli::app {

Result<std::vector<ReplayPiece>> readTokenReplay(const std::string& path) {
    auto text = readTextFile(path);
    if (!text) return text.status();
    std::vector<ReplayPiece> out;
    std::istringstream in(text.value());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.empty() || line[0] == '#') continue;
        auto bad = [&](const std::string& what) {
            return Status(ErrorCode::Malformed, path + ": line " + std::to_string(n) + ": " + what);
        };
        const size_t tab = line.find('\t');
        if (tab == std::string::npos) return bad("expected <delay in microseconds><TAB><piece>");
        int64_t delay = -1;
        // At most an hour between two pieces: anything longer is a broken recording.
        if (std::string e =
                parseInteger(std::string_view(line).substr(0, tab), 0, 3600000000LL, &delay);
            !e.empty())
            return bad("delay: " + e);
        const nlohmann::json piece =
            nlohmann::json::parse(line.substr(tab + 1), nullptr, /*allow_exceptions=*/false);
        if (!piece.is_string()) return bad("the piece is not one JSON string");
        out.push_back({delay, piece.get<std::string>()});
    }
    if (out.empty()) return Status(ErrorCode::Malformed, path + ": no pieces");
    return out;
}

} // namespace coli::app
