#include "tokenizer/tokenizer.h"

#include "core/file_text.h"
#include "tokenizer/tokenizer_impl.h"

namespace coli {

using tokjson::Ctx;
using tokjson::Json;

Tokenizer::Tokenizer() : m_impl(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::fromFile(const std::string& path) {
    auto text = readTextFile(path);
    if (!text) return text.status();
    return fromJson(text.value(), path);
}

namespace {

const Json& optionalMember(const Json& root, const char* key) {
    static const Json null;
    auto it = root.find(key);
    return it == root.end() ? null : *it;
}

Status parseAddedTokens(const Json& root, const Ctx& ctx, std::vector<AddedToken>& out) {
    const Json& list = optionalMember(root, "added_tokens");
    if (list.is_null()) return {};
    const Ctx lctx = ctx.at("added_tokens");
    if (!list.is_array()) return tokjson::malformed(lctx, "expected a list");
    for (size_t i = 0; i < list.size(); ++i) {
        const Json& j = list[i];
        const Ctx c = lctx.at(i);
        AddedToken t;
        auto content = tokjson::getString(j, "content", c);
        if (!content) return content.status();
        if (content->empty()) return tokjson::malformed(c.at("content"), "empty token");
        auto id = tokjson::member(j, "id", c);
        if (!id) return id.status();
        if (!(*id)->is_number_integer() || (*id)->get<long long>() < 0 ||
            (*id)->get<long long>() >= (1LL << 24))
            return tokjson::malformed(c.at("id"), "expected an id in [0, 16777216)");
        t.content = *content;
        t.id = static_cast<int32_t>((*id)->get<long long>());
        auto special = tokjson::optBool(j, "special", c, false);
        if (!special) return special.status();
        t.special = *special;
        auto lstrip = tokjson::optBool(j, "lstrip", c, false);
        auto rstrip = tokjson::optBool(j, "rstrip", c, false);
        auto single = tokjson::optBool(j, "single_word", c, false);
        auto normalized = tokjson::optBool(j, "normalized", c, !t.special);
        for (auto* r : {&lstrip, &rstrip, &single, &normalized})
            if (!*r) return r->status();
        t.lstrip = *lstrip;
        t.rstrip = *rstrip;
        t.singleWord = *single;
        t.normalized = *normalized;
        out.push_back(std::move(t));
    }
    return {};
}

} // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::fromJson(const std::string& json,
                                                       const std::string& sourceName) {
    auto tok = std::unique_ptr<Tokenizer>(new Tokenizer());
    Impl& im = *tok->m_impl;
    im.source = sourceName;
    const Ctx root{&im.source, ""};

    Json doc;
    try {
        doc = Json::parse(json);
    } catch (const Json::exception& e) {
        return Status(ErrorCode::Malformed, sourceName + ": invalid JSON: " + e.what());
    }
    if (!doc.is_object()) return tokjson::malformed(root, "expected a JSON object");

    // Model: only BPE.
    auto model = tokjson::member(doc, "model", root);
    if (!model) return model.status();
    const Ctx mctx = root.at("model");
    auto type = tokjson::optString(**model, "type", mctx, "");
    if (!type) return type.status();
    if (type->empty() && !(*model)->contains("merges"))
        return tokjson::malformed(mctx.at("type"), "missing (and no merges: not a BPE model)");
    if (!type->empty() && *type != "BPE")
        return tokjson::unsupported(mctx.at("type"),
                                    "model type \"" + *type + "\" is not supported (only BPE)");
    auto bpe = BpeModel::fromJson(**model, mctx);
    if (!bpe) return bpe.status();
    im.model = std::move(*bpe);

    auto normalizer =
        Normalizer::fromJson(optionalMember(doc, "normalizer"), root.at("normalizer"));
    if (!normalizer) return normalizer.status();
    im.normalizer = std::move(*normalizer);
    auto pre =
        PreTokenizer::fromJson(optionalMember(doc, "pre_tokenizer"), root.at("pre_tokenizer"));
    if (!pre) return pre.status();
    im.preTokenizer = std::move(*pre);
    auto post =
        PostProcessor::fromJson(optionalMember(doc, "post_processor"), root.at("post_processor"));
    if (!post) return post.status();
    im.postProcessor = std::move(*post);
    auto decoder = Decoder::fromJson(optionalMember(doc, "decoder"), root.at("decoder"));
    if (!decoder) return decoder.status();
    im.decoder = std::move(*decoder);

    COLI_RETURN_IF_ERROR(parseAddedTokens(doc, root, im.added));
    im.idLimit = im.model->idLimit();
    for (size_t i = 0; i < im.added.size(); ++i) {
        const AddedToken& t = im.added[i];
        im.addedById.emplace(t.id, i);
        im.idLimit = std::max(im.idLimit, t.id + 1);
        // As added_vocabulary.rs: normalized tokens are looked for in the second pass, spelled
        // as the normalizer writes them.
        if (t.normalized)
            im.normMatcher.add(im.normalizer.apply(t.content), static_cast<int>(i));
        else
            im.rawMatcher.add(t.content, static_cast<int>(i));
    }
    im.special.assign(static_cast<size_t>(im.idLimit), false);
    for (const AddedToken& t : im.added)
        if (t.special) im.special[static_cast<size_t>(t.id)] = true;
    return tok;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addSpecial) const {
    const Impl& im = *m_impl;
    const std::string s = sanitizeUtf8(text);
    std::vector<int32_t> ids;
    std::vector<std::string> pieces;
    for (const auto& span : im.rawMatcher.split(s, im.added)) {
        if (span.token >= 0) {
            ids.push_back(im.added[static_cast<size_t>(span.token)].id);
            continue;
        }
        const std::string_view segment(s.data() + span.begin, span.end - span.begin);
        const std::string norm = im.normalizer.apply(segment);
        for (const auto& sub : im.normMatcher.split(norm, im.added)) {
            if (sub.token >= 0) {
                ids.push_back(im.added[static_cast<size_t>(sub.token)].id);
                continue;
            }
            pieces.clear();
            im.preTokenizer.split(std::string_view(norm).substr(sub.begin, sub.end - sub.begin),
                                  span.begin == 0 && sub.begin == 0, pieces);
            for (const std::string& p : pieces)
                im.model->tokenize(p, ids);
        }
    }
    if (addSpecial) im.postProcessor.apply(ids);
    return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skipSpecial) const {
    const Impl& im = *m_impl;
    Decoder::State state;
    std::string raw;
    for (int32_t id : ids) {
        bool isAdded = false;
        const std::string* token = im.tokenOf(id, isAdded);
        if (!token || (skipSpecial && im.isSpecial(id))) continue;
        im.decoder.push(*token, isAdded, state, raw);
    }
    im.decoder.finish(state, raw);
    return sanitizeUtf8(raw);
}

int Tokenizer::vocabSize() const {
    return m_impl->idLimit;
}

std::optional<int32_t> Tokenizer::tokenId(std::string_view token) const {
    for (const AddedToken& t : m_impl->added)
        if (t.content == token) return t.id;
    return m_impl->model->tokenToId(token);
}

std::string Tokenizer::tokenString(int32_t id) const {
    bool isAdded = false;
    const std::string* s = m_impl->tokenOf(id, isAdded);
    return s ? *s : std::string();
}

bool Tokenizer::isSpecial(int32_t id) const {
    return m_impl->isSpecial(id);
}

} // namespace coli
