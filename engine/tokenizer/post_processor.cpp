#include "tokenizer/post_processor.h"

namespace coli {

using tokjson::Ctx;
using tokjson::Json;

Result<PostProcessor> PostProcessor::fromJson(const Json& j, const Ctx& ctx) {
    PostProcessor p;
    if (j.is_null()) return p;
    COLI_RETURN_IF_ERROR(parse(j, ctx, p));
    return p;
}

namespace {

// ["<s>", 1] as Roberta/Bert processing write cls and sep.
Result<int32_t> pairId(const Json& j, const char* key, const Ctx& ctx) {
    auto m = tokjson::member(j, key, ctx);
    if (!m) return m.status();
    const Json& v = **m;
    if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer())
        return tokjson::malformed(ctx.at(key), "expected [token, id]");
    return static_cast<int32_t>(v[1].get<long long>());
}

} // namespace

Status PostProcessor::parse(const Json& j, const Ctx& ctx, PostProcessor& p) {
    auto type = tokjson::typeOf(j, ctx);
    if (!type) return type.status();
    const std::string& t = *type;
    if (t == "ByteLevel") return {};
    if (t == "Sequence") {
        return tokjson::forEachInList(j, "processors", ctx, [&](const Json& item, const Ctx& c) {
            // Each processor wraps the output of the previous one.
            PostProcessor inner;
            COLI_RETURN_IF_ERROR(parse(item, c, inner));
            p.m_prefix.insert(p.m_prefix.begin(), inner.m_prefix.begin(), inner.m_prefix.end());
            p.m_suffix.insert(p.m_suffix.end(), inner.m_suffix.begin(), inner.m_suffix.end());
            return Status{};
        });
    }
    if (t == "RobertaProcessing" || t == "BertProcessing") {
        auto cls = pairId(j, "cls", ctx);
        auto sep = pairId(j, "sep", ctx);
        if (!cls) return cls.status();
        if (!sep) return sep.status();
        p.m_prefix = {*cls};
        p.m_suffix = {*sep};
        return {};
    }
    if (t == "TemplateProcessing") {
        auto single = tokjson::member(j, "single", ctx);
        if (!single) return single.status();
        const Ctx sctx = ctx.at("single");
        if (!(*single)->is_array()) return tokjson::malformed(sctx, "expected a list");
        auto specials = tokjson::member(j, "special_tokens", ctx);
        const Json emptyObject = Json::object();
        const Json& sp = specials ? **specials : emptyObject;
        bool seenA = false;
        for (size_t i = 0; i < (*single)->size(); ++i) {
            const Json& item = (**single)[i];
            const Ctx ictx = sctx.at(i);
            if (item.is_object() && item.contains("Sequence")) {
                auto id = tokjson::getString(item["Sequence"], "id", ictx.at("Sequence"));
                if (!id) return id.status();
                if (*id != "A" || seenA)
                    return tokjson::malformed(ictx, "a single template holds sequence A once");
                seenA = true;
            } else if (item.is_object() && item.contains("SpecialToken")) {
                auto name = tokjson::getString(item["SpecialToken"], "id", ictx.at("SpecialToken"));
                if (!name) return name.status();
                const Ctx tctx = ctx.at("special_tokens").at(*name);
                if (!sp.is_object() || !sp.contains(*name))
                    return tokjson::malformed(tctx, "missing (used by the single template)");
                auto ids = tokjson::member(sp[*name], "ids", tctx);
                if (!ids) return ids.status();
                if (!(*ids)->is_array())
                    return tokjson::malformed(tctx.at("ids"), "expected a list");
                auto& target = seenA ? p.m_suffix : p.m_prefix;
                for (const Json& v : **ids) {
                    if (!v.is_number_integer())
                        return tokjson::malformed(tctx.at("ids"), "expected integer ids");
                    target.push_back(static_cast<int32_t>(v.get<long long>()));
                }
            } else {
                return tokjson::malformed(ictx, "expected {\"Sequence\": ...} or "
                                                "{\"SpecialToken\": ...}");
            }
        }
        if (!seenA) return tokjson::malformed(sctx, "the single template has no sequence A");
        return {};
    }
    return tokjson::unsupported(ctx, "post_processor type \"" + t + "\" is not supported");
}

void PostProcessor::apply(std::vector<int32_t>& ids) const {
    if (m_prefix.empty() && m_suffix.empty()) return;
    ids.insert(ids.begin(), m_prefix.begin(), m_prefix.end());
    ids.insert(ids.end(), m_suffix.begin(), m_suffix.end());
}

} // namespace coli
