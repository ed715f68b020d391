#pragma once
// tokenizer.json "added_tokens": tokens matched in the text before the model runs (special tokens
// such as <|im_start|>, and plain added tokens). As Hugging Face's added_vocabulary.rs:
//   - tokens with normalized=false are matched in the raw text, the others in the normalized text
//     of the pieces between those matches;
//   - leftmost-longest matching;
//   - single_word: a match is dropped when a word character touches it on either side;
//   - lstrip / rstrip: whitespace to the left / right of the match is swallowed by the token.
// Internal header. Thread-safety: immutable after construction; find() may run concurrently.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace coli {

struct AddedToken {
    std::string content;
    int32_t id = 0;
    bool special = false;
    bool lstrip = false;
    bool rstrip = false;
    bool singleWord = false;
    bool normalized = false;
};

// Leftmost-longest matcher over a fixed set of patterns (a byte trie).
class AddedTokenMatcher {
public:
    // Registers `pattern` (non-empty) as the spelling of token index `tokenIndex`.
    void add(std::string_view pattern, int tokenIndex);
    bool empty() const { return m_nodes.size() <= 1; }

    struct Span {
        size_t begin, end;
        int token; // index into the token list; -1 for text between matches
    };
    // Cuts text into spans covering it: matches of tokens (after the single_word / lstrip /
    // rstrip rules of `tokens`) and the text between them (non-empty spans only).
    std::vector<Span> split(std::string_view text, const std::vector<AddedToken>& tokens) const;

private:
    struct Node {
        std::vector<std::pair<unsigned char, int32_t>> children;
        int token = -1;
    };
    int32_t child(int32_t node, unsigned char c) const;
    std::vector<Node> m_nodes{Node{}};
    bool m_first[256] = {}; // bytes that start some pattern
};

} // namespace coli
