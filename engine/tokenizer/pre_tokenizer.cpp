#include "tokenizer/pre_tokenizer.h"

#include "core/strings.h"
#include "tokenizer/byte_level.h"

#include <algorithm>

namespace coli {

using tokjson::Ctx;
using tokjson::Json;

Result<PreTokenizer> PreTokenizer::fromJson(const Json& j, const Ctx& ctx) {
    PreTokenizer p;
    if (j.is_null()) return p;
    COLI_RETURN_IF_ERROR(parse(j, ctx, p.m_steps));
    return p;
}

Status PreTokenizer::parse(const Json& j, const Ctx& ctx, std::vector<Step>& steps) {
    auto type = tokjson::typeOf(j, ctx);
    if (!type) return type.status();
    const std::string& t = *type;
    if (t == "Sequence") {
        return tokjson::forEachInList(j, "pretokenizers", ctx, [&](const Json& item, const Ctx& c) {
            return parse(item, c, steps);
        });
    }
    Step step{};
    if (t == "Split") {
        step.kind = Kind::Split;
        auto pat = tokjson::member(j, "pattern", ctx);
        if (!pat) return pat.status();
        const Ctx pctx = ctx.at("pattern");
        if ((*pat)->contains("String") && (**pat)["String"].is_string()) {
            step.literal = (**pat)["String"].get<std::string>();
        } else if ((*pat)->contains("Regex") && (**pat)["Regex"].is_string()) {
            auto re = Regex::compile((**pat)["Regex"].get<std::string>(),
                                     *pctx.file + ": " + pctx.path + ".Regex");
            if (!re) return re.status();
            step.regex = std::move(*re);
        } else {
            return tokjson::malformed(pctx, "expected {\"String\": ...} or {\"Regex\": ...}");
        }
        auto behavior = tokjson::getString(j, "behavior", ctx);
        if (!behavior) return behavior.status();
        const std::string& b = *behavior;
        if (b == "Removed")
            step.behavior = Behavior::Removed;
        else if (b == "Isolated")
            step.behavior = Behavior::Isolated;
        else if (b == "MergedWithPrevious")
            step.behavior = Behavior::MergedWithPrevious;
        else if (b == "MergedWithNext")
            step.behavior = Behavior::MergedWithNext;
        else if (b == "Contiguous")
            step.behavior = Behavior::Contiguous;
        else
            return tokjson::malformed(ctx.at("behavior"), "unknown split behavior \"" + b + "\"");
        auto invert = tokjson::optBool(j, "invert", ctx, false);
        if (!invert) return invert.status();
        step.invert = *invert;
    } else if (t == "ByteLevel") {
        step.kind = Kind::ByteLevel;
        auto aps = tokjson::optBool(j, "add_prefix_space", ctx, true);
        auto useRegex = tokjson::optBool(j, "use_regex", ctx, true);
        if (!aps) return aps.status();
        if (!useRegex) return useRegex.status();
        step.addPrefixSpace = *aps;
        if (*useRegex) {
            auto re = Regex::compile(byte_level::kGpt2Pattern, "GPT-2 byte-level pattern");
            if (!re) return re.status();
            step.regex = std::move(*re);
        }
    } else if (t == "Metaspace") {
        step.kind = Kind::Metaspace;
        auto rep = tokjson::optString(j, "replacement", ctx, "\xE2\x96\x81");
        if (!rep) return rep.status();
        step.literal = *rep;
        auto scheme = tokjson::optString(j, "prepend_scheme", ctx, "");
        if (!scheme) return scheme.status();
        if (scheme->empty()) { // files written before prepend_scheme existed
            auto aps = tokjson::optBool(j, "add_prefix_space", ctx, true);
            if (!aps) return aps.status();
            step.prepend = *aps ? Prepend::Always : Prepend::Never;
        } else if (*scheme == "always") {
            step.prepend = Prepend::Always;
        } else if (*scheme == "first") {
            step.prepend = Prepend::First;
        } else if (*scheme == "never") {
            step.prepend = Prepend::Never;
        } else {
            return tokjson::malformed(ctx.at("prepend_scheme"),
                                      "expected \"always\", \"first\" or \"never\"");
        }
        auto split = tokjson::optBool(j, "split", ctx, true);
        if (!split) return split.status();
        step.metaspaceSplit = *split;
    } else {
        return tokjson::unsupported(ctx, "pre_tokenizer type \"" + t + "\" is not supported");
    }
    steps.push_back(std::move(step));
    return {};
}

namespace {

// Segments covering text: (begin, end, isMatch), as Hugging Face's Pattern::find_matches.
struct Segment {
    size_t b, e;
    bool match;
};

std::vector<Segment> segmentsFromMatches(size_t size,
                                         const std::vector<std::pair<size_t, size_t>>& hits) {
    std::vector<Segment> segs;
    size_t prev = 0;
    for (auto [b, e] : hits) {
        if (prev != b) segs.push_back({prev, b, false});
        segs.push_back({b, e, true});
        prev = e;
    }
    if (prev != size) segs.push_back({prev, size, false});
    return segs;
}

void literalMatches(std::string_view text, std::string_view lit,
                    std::vector<std::pair<size_t, size_t>>& out) {
    if (lit.empty()) return;
    for (size_t pos = 0; (pos = text.find(lit, pos)) != std::string_view::npos; pos += lit.size())
        out.emplace_back(pos, pos + lit.size());
}

} // namespace

void PreTokenizer::runStep(const Step& step, std::vector<Piece>& pieces) const {
    std::vector<Piece> next;
    next.reserve(pieces.size());
    std::vector<std::pair<size_t, size_t>> hits;
    for (Piece& piece : pieces) {
        std::string text = std::move(piece.text);
        const bool atStart = piece.atTextStart;
        auto emit = [&](size_t b, size_t e, bool first) {
            if (e > b) next.push_back({text.substr(b, e - b), atStart && first});
        };
        hits.clear();
        switch (step.kind) {
        case Kind::Split: {
            if (step.regex)
                step.regex->findAll(text, hits);
            else
                literalMatches(text, step.literal, hits);
            auto segs = segmentsFromMatches(text.size(), hits);
            if (step.invert)
                for (Segment& s : segs)
                    s.match = !s.match;
            // Merge per behavior (NormalizedString::split); `remove` marks dropped segments.
            std::vector<std::pair<Segment, bool>> spans;
            bool prevMatch = false;
            switch (step.behavior) {
            case Behavior::Isolated:
                for (const Segment& s : segs)
                    spans.push_back({s, false});
                break;
            case Behavior::Removed:
                for (const Segment& s : segs)
                    spans.push_back({s, s.match});
                break;
            case Behavior::Contiguous:
                for (const Segment& s : segs) {
                    if (!spans.empty() && s.match == prevMatch)
                        spans.back().first.e = s.e;
                    else
                        spans.push_back({s, false});
                    prevMatch = s.match;
                }
                break;
            case Behavior::MergedWithPrevious:
                for (const Segment& s : segs) {
                    if (!spans.empty() && s.match && !prevMatch)
                        spans.back().first.e = s.e;
                    else
                        spans.push_back({s, false});
                    prevMatch = s.match;
                }
                break;
            case Behavior::MergedWithNext:
                for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
                    if (!spans.empty() && it->match && !prevMatch)
                        spans.back().first.b = it->b;
                    else
                        spans.push_back({*it, false});
                    prevMatch = it->match;
                }
                std::reverse(spans.begin(), spans.end());
                break;
            }
            bool first = true;
            for (const auto& [s, remove] : spans) {
                if (!remove) emit(s.b, s.e, first && s.b == 0);
                first = false;
            }
            break;
        }
        case Kind::ByteLevel: {
            if (step.addPrefixSpace && (text.empty() || text[0] != ' ')) text = " " + text;
            std::vector<std::pair<size_t, size_t>> spans;
            if (step.regex) {
                step.regex->findAll(text, hits);
                for (const Segment& s : segmentsFromMatches(text.size(), hits))
                    spans.emplace_back(s.b, s.e);
            } else {
                spans.emplace_back(0, text.size());
            }
            for (auto [b, e] : spans) {
                if (e <= b) continue;
                std::string mapped;
                byte_level::encodeBytes(std::string_view(text).substr(b, e - b), mapped);
                next.push_back({std::move(mapped), atStart && b == 0});
            }
            break;
        }
        case Kind::Metaspace: {
            replaceAll(text, " ", step.literal);
            const bool startsWithRep = text.compare(0, step.literal.size(), step.literal) == 0;
            const bool prepend =
                step.prepend == Prepend::Always || (step.prepend == Prepend::First && atStart);
            if (prepend && !startsWithRep) text.insert(0, step.literal);
            if (!step.metaspaceSplit) {
                emit(0, text.size(), true);
                break;
            }
            // Split on the replacement, each one starting a new piece (MergedWithNext).
            size_t start = 0;
            for (size_t pos = text.find(step.literal, 1); pos != std::string::npos;
                 pos = text.find(step.literal, pos + step.literal.size())) {
                emit(start, pos, start == 0);
                start = pos;
            }
            emit(start, text.size(), start == 0);
            break;
        }
        }
    }
    pieces = std::move(next);
}

void PreTokenizer::split(std::string_view section, bool atTextStart,
                         std::vector<std::string>& out) const {
    if (section.empty()) return;
    if (m_steps.empty()) {
        out.emplace_back(section);
        return;
    }
    std::vector<Piece> pieces;
    pieces.push_back({std::string(section), atTextStart});
    for (const Step& step : m_steps)
        runStep(step, pieces);
    for (Piece& p : pieces)
        out.push_back(std::move(p.text));
}

} // namespace coli
