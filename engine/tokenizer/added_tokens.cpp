#include "tokenizer/added_tokens.h"

#include "tokenizer/utf8.h"

namespace coli {

int32_t AddedTokenMatcher::child(int32_t node, unsigned char c) const {
    for (const auto& [byte, next] : m_nodes[static_cast<size_t>(node)].children)
        if (byte == c) return next;
    return -1;
}

void AddedTokenMatcher::add(std::string_view pattern, int tokenIndex) {
    if (pattern.empty()) return;
    m_first[static_cast<unsigned char>(pattern[0])] = true;
    int32_t node = 0;
    for (unsigned char c : pattern) {
        int32_t next = child(node, c);
        if (next < 0) {
            next = static_cast<int32_t>(m_nodes.size());
            m_nodes.push_back({});
            m_nodes[static_cast<size_t>(node)].children.emplace_back(c, next);
        }
        node = next;
    }
    // The first registration of a spelling wins (ids of duplicates stay reachable by id).
    if (m_nodes[static_cast<size_t>(node)].token < 0)
        m_nodes[static_cast<size_t>(node)].token = tokenIndex;
}

namespace {

// The code point that ends right before byte offset `end` (precondition: end > 0, valid UTF-8).
char32_t lastChar(std::string_view s, size_t end) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
        --start;
    return utf8::next(s, start);
}

} // namespace

std::vector<AddedTokenMatcher::Span>
AddedTokenMatcher::split(std::string_view text, const std::vector<AddedToken>& tokens) const {
    std::vector<Span> spans;
    if (empty()) {
        if (!text.empty()) spans.push_back({0, text.size(), -1});
        return spans;
    }
    size_t done = 0; // end of the last emitted span
    size_t pos = 0;
    while (pos < text.size()) {
        if (!m_first[static_cast<unsigned char>(text[pos])]) {
            ++pos;
            continue;
        }
        // Longest pattern starting at pos.
        int token = -1;
        size_t end = 0;
        int32_t node = 0;
        for (size_t k = pos; k < text.size(); ++k) {
            node = child(node, static_cast<unsigned char>(text[k]));
            if (node < 0) break;
            if (m_nodes[static_cast<size_t>(node)].token >= 0) {
                token = m_nodes[static_cast<size_t>(node)].token;
                end = k + 1;
            }
        }
        if (token < 0) {
            ++pos;
            continue;
        }
        const AddedToken& t = tokens[static_cast<size_t>(token)];
        size_t b = pos, e = end;
        if (t.singleWord) {
            const bool wordBefore = b > 0 && utf8::isWordChar(lastChar(text, b));
            size_t i = e;
            const bool wordAfter = e < text.size() && utf8::isWordChar(utf8::next(text, i));
            if (wordBefore || wordAfter) {
                pos = end; // Hugging Face's match iterator has already moved past this match
                continue;
            }
        }
        if (t.lstrip) {
            while (b > done && utf8::isWhiteSpace(lastChar(text, b))) {
                --b;
                while (b > done && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80)
                    --b;
            }
        }
        if (t.rstrip) {
            while (e < text.size()) {
                size_t i = e;
                if (!utf8::isWhiteSpace(utf8::next(text, i))) break;
                e = i;
            }
        }
        if (b > done) spans.push_back({done, b, -1});
        spans.push_back({b, e, token});
        done = e;
        pos = e;
    }
    if (done < text.size()) spans.push_back({done, text.size(), -1});
    return spans;
}

} // namespace coli
