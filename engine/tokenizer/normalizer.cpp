#include "tokenizer/normalizer.h"

#include "core/strings.h"
#include "tokenizer/utf8.h"

#include <utf8proc.h>

#include <cstdlib>

namespace coli {

using tokjson::Ctx;
using tokjson::Json;

Result<Normalizer> Normalizer::fromJson(const Json& j, const Ctx& ctx) {
    Normalizer n;
    if (j.is_null()) return n;
    COLI_RETURN_IF_ERROR(parse(j, ctx, n.m_ops));
    return n;
}

Status Normalizer::parse(const Json& j, const Ctx& ctx, std::vector<Op>& ops) {
    auto type = tokjson::typeOf(j, ctx);
    if (!type) return type.status();
    const std::string& t = *type;
    if (t == "Sequence") {
        return tokjson::forEachInList(j, "normalizers", ctx, [&](const Json& item, const Ctx& c) {
            return parse(item, c, ops);
        });
    }
    if (t == "NFC")
        ops.push_back({Kind::Nfc, {}, {}, {}});
    else if (t == "NFD")
        ops.push_back({Kind::Nfd, {}, {}, {}});
    else if (t == "NFKC")
        ops.push_back({Kind::Nfkc, {}, {}, {}});
    else if (t == "NFKD")
        ops.push_back({Kind::Nfkd, {}, {}, {}});
    else if (t == "Prepend") {
        auto p = tokjson::getString(j, "prepend", ctx);
        if (!p) return p.status();
        ops.push_back({Kind::Prepend, *p, {}, {}});
    } else if (t == "Replace") {
        auto content = tokjson::getString(j, "content", ctx);
        if (!content) return content.status();
        auto pat = tokjson::member(j, "pattern", ctx);
        if (!pat) return pat.status();
        const Ctx pctx = ctx.at("pattern");
        if ((*pat)->contains("String") && (**pat)["String"].is_string()) {
            const std::string s = (**pat)["String"].get<std::string>();
            if (s.empty()) return tokjson::malformed(pctx.at("String"), "empty pattern");
            ops.push_back({Kind::ReplaceString, s, *content, {}});
        } else if ((*pat)->contains("Regex") && (**pat)["Regex"].is_string()) {
            auto re = Regex::compile((**pat)["Regex"].get<std::string>(),
                                     *pctx.file + ": " + pctx.path + ".Regex");
            if (!re) return re.status();
            ops.push_back({Kind::ReplaceRegex, {}, *content, std::move(*re)});
        } else {
            return tokjson::malformed(pctx, "expected {\"String\": ...} or {\"Regex\": ...}");
        }
    } else if (t == "Strip") {
        auto l = tokjson::optBool(j, "strip_left", ctx, true);
        auto r = tokjson::optBool(j, "strip_right", ctx, true);
        if (!l) return l.status();
        if (!r) return r.status();
        Op op{Kind::Strip, {}, {}, {}};
        op.left = *l;
        op.right = *r;
        ops.push_back(std::move(op));
    } else {
        return tokjson::unsupported(ctx, "normalizer type \"" + t + "\" is not supported");
    }
    return {};
}

namespace {

std::string unicodeNormalize(std::string_view s, int options) {
    bool ascii = true;
    for (char c : s)
        ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (ascii) return std::string(s); // every normal form leaves ASCII unchanged
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                     static_cast<utf8proc_ssize_t>(s.size()), &out,
                     static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
    if (n < 0) return std::string(s); // cannot happen on valid UTF-8; keep the text as is
    std::string result(reinterpret_cast<char*>(out), static_cast<size_t>(n));
    std::free(out);
    return result;
}

std::string strip(std::string_view s, bool left, bool right) {
    size_t b = 0, e = s.size();
    if (left) {
        while (b < e) {
            size_t i = b;
            if (!utf8::isWhiteSpace(utf8::next(s, i))) break;
            b = i;
        }
    }
    if (right) {
        while (e > b) {
            size_t start = e - 1;
            while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
                --start;
            size_t i = start;
            if (!utf8::isWhiteSpace(utf8::next(s, i))) break;
            e = start;
        }
    }
    return std::string(s.substr(b, e - b));
}

} // namespace

std::string Normalizer::apply(std::string_view in) const {
    std::string s(in);
    for (const Op& op : m_ops) {
        switch (op.kind) {
        case Kind::Nfc:
            s = unicodeNormalize(s, UTF8PROC_COMPOSE);
            break;
        case Kind::Nfd:
            s = unicodeNormalize(s, UTF8PROC_DECOMPOSE);
            break;
        case Kind::Nfkc:
            s = unicodeNormalize(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
            break;
        case Kind::Nfkd:
            s = unicodeNormalize(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
            break;
        case Kind::Prepend:
            if (!s.empty()) s.insert(0, op.a); // HF prepends only to non-empty text
            break;
        case Kind::ReplaceString:
            replaceAll(s, op.a, op.b);
            break;
        case Kind::ReplaceRegex: {
            std::vector<std::pair<size_t, size_t>> hits;
            op.regex->findAll(s, hits);
            if (hits.empty()) break;
            std::string out;
            size_t pos = 0;
            for (auto [b, e] : hits) {
                out.append(s, pos, b - pos);
                out += op.b;
                pos = e;
            }
            out.append(s, pos, std::string::npos);
            s = std::move(out);
            break;
        }
        case Kind::Strip:
            s = strip(s, op.left, op.right);
            break;
        }
    }
    return s;
}

} // namespace coli
