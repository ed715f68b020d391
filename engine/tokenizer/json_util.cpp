#include "tokenizer/json_util.h"

namespace coli::tokjson {

static std::string where(const Ctx& ctx) {
    return *ctx.file + ": " + (ctx.path.empty() ? std::string("(root)") : ctx.path) + ": ";
}

Status malformed(const Ctx& ctx, const std::string& what) {
    return {ErrorCode::Malformed, where(ctx) + what};
}

Status unsupported(const Ctx& ctx, const std::string& what) {
    return {ErrorCode::Unsupported, where(ctx) + what};
}

Result<const Json*> member(const Json& j, const char* key, const Ctx& ctx) {
    if (!j.is_object()) return malformed(ctx, "expected an object");
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return malformed(ctx.at(key), "missing");
    return &*it;
}

Result<std::string> getString(const Json& j, const char* key, const Ctx& ctx) {
    auto m = member(j, key, ctx);
    if (!m) return m.status();
    if (!(*m)->is_string()) return malformed(ctx.at(key), "expected a string");
    return (*m)->get<std::string>();
}

Result<std::string> optString(const Json& j, const char* key, const Ctx& ctx,
                              const std::string& dflt) {
    if (!j.is_object()) return malformed(ctx, "expected an object");
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_string()) return malformed(ctx.at(key), "expected a string");
    return it->get<std::string>();
}

Result<bool> optBool(const Json& j, const char* key, const Ctx& ctx, bool dflt) {
    if (!j.is_object()) return malformed(ctx, "expected an object");
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_boolean()) return malformed(ctx.at(key), "expected true or false");
    return it->get<bool>();
}

Result<long long> optInt(const Json& j, const char* key, const Ctx& ctx, long long dflt) {
    if (!j.is_object()) return malformed(ctx, "expected an object");
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_number_integer()) return malformed(ctx.at(key), "expected an integer");
    return it->get<long long>();
}

Result<std::string> typeOf(const Json& j, const Ctx& ctx) {
    if (!j.is_object()) return malformed(ctx, "expected an object with a \"type\"");
    return getString(j, "type", ctx);
}

Status forEachInList(const Json& j, const char* key, const Ctx& ctx,
                     const std::function<Status(const Json&, const Ctx&)>& each) {
    auto list = member(j, key, ctx);
    if (!list) return list.status();
    const Ctx lctx = ctx.at(key);
    if (!(*list)->is_array()) return malformed(lctx, "expected a list");
    for (size_t i = 0; i < (*list)->size(); ++i)
        COLI_RETURN_IF_ERROR(each((**list)[i], lctx.at(i)));
    return {};
}

} // namespace coli::tokjson
