#pragma once
// tokenizer.json "model" of type BPE: vocabulary, merges ranked by their order in the file, and
// the options these families use: byte_fallback (<0xNN> tokens for characters missing from the
// vocabulary), unk_token + fuse_unk, ignore_merges (a whole piece found in the vocabulary is taken
// as is; Qwen3/Llama-3 style). Merging follows Hugging Face's models/bpe/word.rs: repeatedly merge
// the adjacent pair with the lowest rank, the leftmost first among equal ranks (a priority queue,
// O(n log n) in the piece length). Other model types -> Unsupported naming the type.
// Thread-safety: immutable after fromJson() except the per-piece cache, which sits behind mutexes;
// tokenize() may run concurrently.
#include "tokenizer/json_util.h"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace coli {

class BpeModel {
public:
    static Result<std::unique_ptr<BpeModel>> fromJson(const tokjson::Json& model,
                                                      const tokjson::Ctx& ctx);

    // Appends the ids of one pre-tokenized piece (in the model's alphabet, valid UTF-8).
    void tokenize(std::string_view piece, std::vector<int32_t>& out) const;

    std::optional<int32_t> tokenToId(std::string_view token) const;
    // The vocabulary string of id, or nullptr when no vocabulary entry has this id.
    const std::string* idToToken(int32_t id) const;
    // One past the largest vocabulary id.
    int32_t idLimit() const { return static_cast<int32_t>(m_idToToken.size()); }

private:
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;
    struct Merge {
        int32_t rank;
        int32_t newId;
    };
    static uint64_t pairKey(int32_t a, int32_t b) {
        return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    }
    void mergeWord(std::string_view piece, std::vector<int32_t>& out) const;

    Vocab m_vocab;
    std::vector<std::string> m_idToToken;
    std::vector<bool> m_hasId;
    std::unordered_map<char32_t, int32_t> m_charIds; // single-character vocabulary entries
    std::unordered_map<uint64_t, Merge> m_merges;
    std::array<int32_t, 256> m_byteIds{}; // <0xNN> tokens; -1 when absent
    bool m_byteFallback = false;
    bool m_ignoreMerges = false;
    bool m_fuseUnk = false;
    std::optional<int32_t> m_unkId;
    // True when "▁" is in the vocabulary and no token holds a "▁" right after another character
    // (SentencePiece vocabularies). Then no merge can span "x▁", and long pieces (Llama has no
    // pre-tokenizer: BPE sees whole lines) are cut there first; the result is the same, but the
    // short words hit the cache.
    bool m_cutBeforeMetaspace = false;
    void tokenizeWord(std::string_view word, std::vector<int32_t>& out) const;

    // Cache of piece -> ids, sharded to keep lock contention low between threads. Bounded: once a
    // shard is full it stops growing (as Hugging Face's cache does).
    static constexpr size_t kShards = 16;
    static constexpr size_t kShardCapacity = 4096;
    static constexpr size_t kMaxCachedPiece = 256; // bytes
    struct Shard {
        std::mutex mutex;
        std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
    };
    mutable std::array<Shard, kShards> m_cache;
};

} // namespace coli
