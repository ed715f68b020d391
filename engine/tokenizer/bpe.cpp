#include "tokenizer/bpe.h"

#include "tokenizer/utf8.h"

#include <cstdio>
#include <queue>

namespace coli {

using tokjson::Ctx;
using tokjson::Json;

namespace {

// Ids beyond this are refused: the id -> string table is sized by the largest id.
constexpr long long kMaxId = 1 << 24;
constexpr std::string_view kMetaspace = "\xE2\x96\x81"; // U+2581

} // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::fromJson(const Json& j, const Ctx& ctx) {
    auto m = std::unique_ptr<BpeModel>(new BpeModel());
    if (!j.is_object()) return tokjson::malformed(ctx, "expected an object");

    if (auto it = j.find("dropout"); it != j.end() && !it->is_null()) {
        if (!it->is_number()) return tokjson::malformed(ctx.at("dropout"), "expected a number");
        if (it->get<double>() > 0.0)
            return tokjson::unsupported(ctx.at("dropout"), "BPE dropout is not supported");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        auto v = tokjson::optString(j, key, ctx, "");
        if (!v) return v.status();
        if (!v->empty())
            return tokjson::unsupported(ctx.at(key),
                                        "a non-empty " + std::string(key) + " is not supported");
    }
    auto bf = tokjson::optBool(j, "byte_fallback", ctx, false);
    auto im = tokjson::optBool(j, "ignore_merges", ctx, false);
    auto fu = tokjson::optBool(j, "fuse_unk", ctx, false);
    auto unk = tokjson::optString(j, "unk_token", ctx, "");
    if (!bf) return bf.status();
    if (!im) return im.status();
    if (!fu) return fu.status();
    if (!unk) return unk.status();
    m->m_byteFallback = *bf;
    m->m_ignoreMerges = *im;
    m->m_fuseUnk = *fu;

    // Vocabulary.
    auto vocab = tokjson::member(j, "vocab", ctx);
    if (!vocab) return vocab.status();
    const Ctx vctx = ctx.at("vocab");
    if (!(*vocab)->is_object()) return tokjson::malformed(vctx, "expected an object");
    m->m_vocab.reserve((*vocab)->size());
    for (auto it = (*vocab)->begin(); it != (*vocab)->end(); ++it) {
        if (!it.value().is_number_integer() || it.value().get<long long>() < 0 ||
            it.value().get<long long>() >= kMaxId)
            return tokjson::malformed(vctx.at(it.key()),
                                      "expected an id in [0, " + std::to_string(kMaxId) + ")");
        const auto id = static_cast<int32_t>(it.value().get<long long>());
        m->m_vocab.emplace(it.key(), id);
        if (static_cast<size_t>(id) >= m->m_idToToken.size()) {
            m->m_idToToken.resize(static_cast<size_t>(id) + 1);
            m->m_hasId.resize(static_cast<size_t>(id) + 1, false);
        }
        m->m_idToToken[static_cast<size_t>(id)] = it.key();
        m->m_hasId[static_cast<size_t>(id)] = true;
        size_t i = 0;
        const std::string& key = it.key();
        if (!key.empty()) {
            const char32_t cp = utf8::next(key, i);
            if (i == key.size()) m->m_charIds.emplace(cp, id);
        }
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        auto id = m->tokenToId(name);
        m->m_byteIds[static_cast<size_t>(b)] = id ? *id : -1;
    }
    if (!unk->empty()) m->m_unkId = m->tokenToId(*unk);
    if (m->tokenToId(kMetaspace)) {
        bool cut = true;
        for (const auto& [token, id] : m->m_vocab) {
            for (size_t p = token.find(kMetaspace, 1); cut && p != std::string::npos;
                 p = token.find(kMetaspace, p + 1))
                cut = p >= kMetaspace.size() &&
                      token.compare(p - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0 &&
                      token.find_first_not_of(kMetaspace) > p; // only "▁" before it
            if (!cut) break;
        }
        m->m_cutBeforeMetaspace = cut;
    }

    // Merges: rank = position in the list.
    auto merges = tokjson::member(j, "merges", ctx);
    if (!merges) return merges.status();
    const Ctx mctx = ctx.at("merges");
    if (!(*merges)->is_array()) return tokjson::malformed(mctx, "expected a list");
    m->m_merges.reserve((*merges)->size());
    for (size_t r = 0; r < (*merges)->size(); ++r) {
        const Json& e = (**merges)[r];
        std::string a, b;
        if (e.is_string()) {
            const std::string s = e.get<std::string>();
            const size_t sp = s.find(' ');
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                return tokjson::malformed(mctx.at(r), "expected \"a b\" (one space)");
            a = s.substr(0, sp);
            b = s.substr(sp + 1);
        } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
            a = e[0].get<std::string>();
            b = e[1].get<std::string>();
        } else {
            return tokjson::malformed(mctx.at(r), "expected \"a b\" or [\"a\", \"b\"]");
        }
        auto ida = m->tokenToId(a), idb = m->tokenToId(b), idab = m->tokenToId(a + b);
        if (!ida || !idb || !idab)
            return tokjson::malformed(mctx.at(r), "merge \"" + a + " " + b +
                                                      "\" uses a token missing from the vocab");
        // A repeated pair keeps its last rank, as Hugging Face's map insertion does.
        m->m_merges[pairKey(*ida, *idb)] = Merge{static_cast<int32_t>(r), *idab};
    }
    return m;
}

std::optional<int32_t> BpeModel::tokenToId(std::string_view token) const {
    auto it = m_vocab.find(token);
    if (it == m_vocab.end()) return std::nullopt;
    return it->second;
}

const std::string* BpeModel::idToToken(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= m_idToToken.size() || !m_hasId[size_t(id)])
        return nullptr;
    return &m_idToToken[static_cast<size_t>(id)];
}

void BpeModel::mergeWord(std::string_view piece, std::vector<int32_t>& out) const {
    struct Symbol {
        int32_t id;
        int32_t prev, next; // indices into symbols; -1 at the ends
        bool alive;
    };
    std::vector<Symbol> symbols;
    symbols.reserve(piece.size());
    auto add = [&](int32_t id) {
        const auto n = static_cast<int32_t>(symbols.size());
        if (n > 0) symbols.back().next = n;
        symbols.push_back({id, n - 1, -1, true});
    };
    bool pendingUnk =
        false; // the last symbol is an unk that a following unknown char may fuse into
    size_t i = 0;
    while (i < piece.size()) {
        const size_t start = i;
        const char32_t cp = utf8::next(piece, i);
        if (auto it = m_charIds.find(cp); it != m_charIds.end()) {
            add(it->second);
            pendingUnk = false;
            continue;
        }
        if (m_byteFallback) {
            bool all = true;
            for (size_t k = start; k < i; ++k)
                all = all && m_byteIds[static_cast<unsigned char>(piece[k])] >= 0;
            if (all) {
                for (size_t k = start; k < i; ++k)
                    add(m_byteIds[static_cast<unsigned char>(piece[k])]);
                pendingUnk = false;
                continue;
            }
        }
        if (m_unkId) {
            if (!(pendingUnk && m_fuseUnk)) add(*m_unkId);
            pendingUnk = true;
        }
        // Without an unk token an unknown character yields no id (as Hugging Face's JS port).
    }

    struct Candidate {
        int32_t rank, pos, newId;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : pos > o.pos;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    auto consider = [&](int32_t pos) {
        const Symbol& s = symbols[static_cast<size_t>(pos)];
        if (s.next < 0) return;
        auto it = m_merges.find(pairKey(s.id, symbols[static_cast<size_t>(s.next)].id));
        if (it != m_merges.end()) queue.push({it->second.rank, pos, it->second.newId});
    };
    for (int32_t p = 0; p + 1 < static_cast<int32_t>(symbols.size()); ++p)
        consider(p);
    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& left = symbols[static_cast<size_t>(top.pos)];
        if (!left.alive || left.next < 0) continue;
        Symbol& right = symbols[static_cast<size_t>(left.next)];
        // Stale entry: the pair at this position changed since it was queued.
        auto it = m_merges.find(pairKey(left.id, right.id));
        if (it == m_merges.end() || it->second.newId != top.newId) continue;
        left.id = top.newId;
        right.alive = false;
        left.next = right.next;
        if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
        if (left.prev >= 0) consider(left.prev);
        consider(top.pos);
    }
    for (const Symbol& s : symbols)
        if (s.alive) out.push_back(s.id);
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& out) const {
    if (piece.empty()) return;
    if (m_ignoreMerges) {
        if (auto id = tokenToId(piece)) {
            out.push_back(*id);
            return;
        }
    }
    if (!m_cutBeforeMetaspace || piece.size() < kMaxCachedPiece) {
        tokenizeWord(piece, out);
        return;
    }
    // Cut before each "▁" that follows another character (see m_cutBeforeMetaspace).
    size_t start = 0;
    for (size_t p = piece.find(kMetaspace, 1); p != std::string_view::npos;
         p = piece.find(kMetaspace, p + kMetaspace.size())) {
        if (piece.compare(p - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0) continue;
        tokenizeWord(piece.substr(start, p - start), out);
        start = p;
    }
    tokenizeWord(piece.substr(start), out);
}

void BpeModel::tokenizeWord(std::string_view piece, std::vector<int32_t>& out) const {
    if (piece.size() >= kMaxCachedPiece) {
        mergeWord(piece, out);
        return;
    }
    Shard& shard = m_cache[StringHash{}(piece) % kShards];
    {
        std::lock_guard lock(shard.mutex);
        if (auto it = shard.map.find(piece); it != shard.map.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    const size_t mark = out.size();
    mergeWord(piece, out);
    std::lock_guard lock(shard.mutex);
    if (shard.map.size() < kShardCapacity)
        shard.map.emplace(std::string(piece),
                          std::vector<int32_t>(out.begin() + long(mark), out.end()));
}

} // namespace coli
