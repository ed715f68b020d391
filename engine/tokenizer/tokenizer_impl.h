#pragma once
// The parts a loaded Tokenizer holds (shared by tokenizer.cpp and stream_decoder.cpp).
// Internal header; immutable after load.
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace coli {

struct Tokenizer::Impl {
    std::string source; // file name for messages
    std::unique_ptr<BpeModel> model;
    std::vector<AddedToken> added;
    std::unordered_map<int32_t, size_t> addedById; // id -> index into added
    AddedTokenMatcher rawMatcher;  // normalized=false tokens, matched in the raw text
    AddedTokenMatcher normMatcher; // normalized=true tokens, matched after normalization
    Normalizer normalizer;
    PreTokenizer preTokenizer;
    PostProcessor postProcessor;
    Decoder decoder;
    int32_t idLimit = 0;
    std::vector<bool> special; // by id

    // The string of id (added token content or vocabulary entry); nullptr when unknown.
    const std::string* tokenOf(int32_t id, bool& isAdded) const {
        if (auto it = addedById.find(id); it != addedById.end()) {
            isAdded = true;
            return &added[it->second].content;
        }
        isAdded = false;
        return model->idToToken(id);
    }
    bool isSpecial(int32_t id) const {
        return id >= 0 && static_cast<size_t>(id) < special.size() && special[size_t(id)];
    }
};

} // namespace coli
