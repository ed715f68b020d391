#include "tokenizer/decoder.h"

#include "core/strings.h"
#include "tokenizer/byte_level.h"

namespace coli {

using tokjson::Ctx;
using tokjson::Json;

Result<Decoder> Decoder::fromJson(const Json& j, const Ctx& ctx) {
    Decoder d;
    if (j.is_null()) {
        d.m_joinWithSpace = true;
        return d;
    }
    COLI_RETURN_IF_ERROR(parse(j, ctx, d));
    return d;
}

Status Decoder::parse(const Json& j, const Ctx& ctx, Decoder& d) {
    auto type = tokjson::typeOf(j, ctx);
    if (!type) return type.status();
    const std::string& t = *type;
    if (t == "Sequence") {
        return tokjson::forEachInList(
            j, "decoders", ctx, [&](const Json& item, const Ctx& c) { return parse(item, c, d); });
    }
    if (t == "Fuse") {
        d.m_fused = true;
        return {};
    }
    Step step{};
    if (t == "Strip") {
        auto content = tokjson::getString(j, "content", ctx);
        auto start = tokjson::optInt(j, "start", ctx, 0);
        auto stop = tokjson::optInt(j, "stop", ctx, 0);
        if (!content) return content.status();
        if (!start) return start.status();
        if (!stop) return stop.status();
        if (*start < 0 || *stop < 0) return tokjson::malformed(ctx, "negative start or stop");
        if (d.m_fused) {
            if (*stop != 0)
                return tokjson::unsupported(ctx.at("stop"),
                                            "Strip with stop > 0 after Fuse is not supported");
            if (!d.m_streamStripContent.empty())
                return tokjson::unsupported(ctx, "two Strip decoders after Fuse");
            d.m_streamStripContent = *content;
            d.m_streamStripStart = static_cast<size_t>(*start);
            return {};
        }
        step = {Kind::Strip, {}, *content, static_cast<size_t>(*start), static_cast<size_t>(*stop)};
    } else if (d.m_fused) {
        return tokjson::unsupported(ctx, "decoder \"" + t + "\" after Fuse is not supported");
    } else if (t == "ByteLevel") {
        step.kind = Kind::ByteLevel;
    } else if (t == "ByteFallback") {
        step.kind = Kind::ByteFallback;
    } else if (t == "Replace") {
        step.kind = Kind::Replace;
        auto content = tokjson::getString(j, "content", ctx);
        if (!content) return content.status();
        auto pat = tokjson::member(j, "pattern", ctx);
        if (!pat) return pat.status();
        if (!(*pat)->contains("String") || !(**pat)["String"].is_string())
            return tokjson::unsupported(ctx.at("pattern"),
                                        "only {\"String\": ...} Replace decoders are supported");
        step.a = (**pat)["String"].get<std::string>();
        step.b = *content;
        if (step.a.empty()) return tokjson::malformed(ctx.at("pattern"), "empty pattern");
    } else if (t == "Metaspace") {
        step.kind = Kind::Metaspace;
        auto rep = tokjson::optString(j, "replacement", ctx, "\xE2\x96\x81");
        auto scheme = tokjson::optString(j, "prepend_scheme", ctx, "");
        auto aps = tokjson::optBool(j, "add_prefix_space", ctx, true);
        if (!rep) return rep.status();
        if (!scheme) return scheme.status();
        if (!aps) return aps.status();
        step.a = *rep;
        step.dropFirst = scheme->empty() ? *aps : *scheme != "never";
    } else {
        return tokjson::unsupported(ctx, "decoder type \"" + t + "\" is not supported");
    }
    d.m_perToken.push_back(std::move(step));
    return {};
}

namespace {

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace

void Decoder::push(std::string_view token, bool isAdded, State& st, std::string& raw) const {
    std::string cur(token);
    for (const Step& step : m_perToken) {
        switch (step.kind) {
        case Kind::ByteLevel:
            if (!isAdded) {
                std::string bytes;
                if (byte_level::decodeToken(cur, bytes)) cur = std::move(bytes);
            }
            break;
        case Kind::Replace:
            replaceAll(cur, step.a, step.b);
            break;
        case Kind::ByteFallback:
            if (cur.size() == 6 && cur.compare(0, 3, "<0x") == 0 && cur[5] == '>' &&
                hexDigit(cur[3]) >= 0 && hexDigit(cur[4]) >= 0)
                cur = std::string(1, static_cast<char>(hexDigit(cur[3]) * 16 + hexDigit(cur[4])));
            break;
        case Kind::Strip: {
            size_t b = 0, e = cur.size();
            for (size_t k = 0; k < step.start && e - b >= step.b.size() &&
                               cur.compare(b, step.b.size(), step.b) == 0;
                 ++k)
                b += step.b.size();
            for (size_t k = 0; k < step.stop && e - b >= step.b.size() &&
                               cur.compare(e - step.b.size(), step.b.size(), step.b) == 0;
                 ++k)
                e -= step.b.size();
            cur = cur.substr(b, e - b);
            break;
        }
        case Kind::Metaspace:
            replaceAll(cur, step.a, st.tokenIndex == 0 && step.dropFirst ? "" : " ");
            break;
        }
    }
    if (m_joinWithSpace && st.tokenIndex > 0) feedStream(" ", st, raw);
    feedStream(cur, st, raw);
    ++st.tokenIndex;
}

void Decoder::feedStream(std::string_view bytes, State& st, std::string& raw) const {
    if (st.stripDone || m_streamStripContent.empty() || m_streamStripStart == 0) {
        raw.append(bytes);
        return;
    }
    const std::string& content = m_streamStripContent;
    for (size_t i = 0; i < bytes.size(); ++i) {
        if (st.stripDone) {
            raw.append(bytes.substr(i));
            return;
        }
        st.held.push_back(bytes[i]);
        if (st.held == content) {
            st.held.clear();
            if (++st.stripped == m_streamStripStart) st.stripDone = true;
        } else if (content.compare(0, st.held.size(), st.held) != 0) {
            raw += st.held;
            st.held.clear();
            st.stripDone = true;
        }
    }
}

void Decoder::finish(State& st, std::string& raw) const {
    raw += st.held;
    st.held.clear();
}

} // namespace coli
