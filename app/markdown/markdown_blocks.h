#pragma once
// Markdown answers split into top-level blocks, for rendering block by block (docs/app.md,
// "How answers are rendered"). Plain C++ over md4c (the CommonMark parser Qt itself uses); no Qt.
//
// A block is one top-level element of the document:
//   - Prose: a paragraph, heading, list, block quote, table or thematic break, rendered to a
//     *safe* subset of HTML for Qt's rich text (see renderProse below);
//   - Code: a fenced or indented code block, with the language of its info string;
//   - Think: the `<think>...</think>` reasoning that opens a Qwen3-style answer.
//
// Safety of the HTML (the answer is untrusted text):
//   - raw HTML in the answer is text (md4c runs with MD_FLAG_NOHTML and every character of the
//     answer is escaped), so Qt's renderer never sees a tag the answer wrote;
//   - no <img> is ever emitted: an image is its alt text (or its URL when the alt text is empty),
//     as a link to the image when the URL's scheme is allowed, so nothing is fetched;
//   - links keep only http, https and mailto targets ("www." autolinks get http://); any other
//     target (file:, javascript:, relative paths) is shown as its text without a link.
// Only the block's text and href values come from the answer; tags, attributes and styles are
// ours.
//
// Thread-safety: free functions are reentrant; a BlockStream is used by one thread at a time.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace coli::markdown {

enum class BlockKind { Prose, Code, Think };

struct Block {
    BlockKind kind = BlockKind::Prose;
    // Prose: the text without markup (for search, copy and tests); Code: the code, without the
    // fences and without its last newline; Think: the reasoning, trimmed of surrounding newlines.
    std::string text;
    std::string html;     // Prose: safe rich text (see the header comment); empty otherwise
    std::string language; // Code: the first word of the info string ("python"); may be empty
    bool operator==(const Block&) const = default;
};

struct RenderOptions {
    std::string monoFamily = "DejaVu Sans Mono"; // font of inline code and nested code blocks
};

// The top-level blocks of a whole Markdown document, in order. Never fails: any byte string is
// Markdown (invalid UTF-8 is passed through as text; Qt shows U+FFFD for it).
std::vector<Block> parseBlocks(std::string_view markdown, const RenderOptions& opt = {});

// Whether a link target may be opened on a click: http:, https: or mailto: (ASCII
// case-insensitive).
bool isAllowedLink(std::string_view url);

// Escapes &, <, > and " for HTML text and attribute values.
std::string escapeHtml(std::string_view text);

// An answer being streamed, split into blocks incrementally.
//
// blocks() = final blocks, then open ones. The first finalCount() blocks are final: appending
// more text never changes or removes them (a test checks this over a 2,000-token stream). Each
// append() re-parses only the open part of the text (from openOffset(), the start of the last
// top-level block), plus, when the append completed a line, the open part once more to find
// where its last block starts. After finish(), blocks() equals parseBlocks() of the Markdown
// after the think block.
//
// Why that holds: CommonMark builds blocks line by line, and a top-level block followed by
// another one is closed for good; so once a complete line has started a new top-level block,
// everything before that block's first line is final. The cut is taken at a line start and
// checked (the two halves parse to the same blocks as the whole open part), so a construct whose
// meaning depends on the lines before it is never cut; until a valid cut exists, the block stays
// open. Two things do not survive cuts while streaming, and finish() repairs them: a
// reference-style link `[x][ref]` resolves only against a `[ref]: url` definition in its own
// block, and md4c corner cases where a cut block parses differently without its context.
//
// Think blocks: when the answer starts (after white space) with `<think>`, the text up to
// `</think>` is a Think block (open until `</think>` arrives; a partial `</think>` at the end is
// not shown) and the Markdown starts after it.
class BlockStream {
public:
    explicit BlockStream(RenderOptions opt = {}) : m_opt(std::move(opt)) {}

    void append(std::string_view piece);
    // The end of the answer (more may still be appended, e.g. to continue it). Resolves a partial
    // "<think" at the start as text, and re-parses the whole Markdown once: where md4c's parse
    // of the whole text differs from the streamed blocks (a parser corner case, see the .cpp),
    // the blocks are replaced by the whole parse and reconciledCount() grows.
    void finish();
    void clear();

    const std::string& text() const { return m_text; }
    const std::vector<Block>& blocks() const { return m_blocks; }
    size_t finalCount() const { return m_finalCount; }
    // Where the re-parsed (open) Markdown starts, as a byte offset into text().
    size_t openOffset() const { return m_openStart; }
    bool hasThink() const { return m_think != Think::None && m_think != Think::Undecided; }
    bool thinkOpen() const { return m_think == Think::Open; }
    // Bytes handed to the parser so far (all appends): grows with the open part, not the answer.
    size_t parsedBytes() const { return m_parsedBytes; }
    int reconciledCount() const { return m_reconciled; }

private:
    enum class Think { Undecided, None, Open, Closed };
    void updateThink();
    void tryCut();
    std::vector<Block> parse(std::string_view md);

    RenderOptions m_opt;
    std::string m_text;
    std::vector<Block> m_blocks;
    size_t m_finalCount = 0;
    Think m_think = Think::Undecided;
    size_t m_mdStart = 0;    // where the Markdown after the think block starts
    size_t m_openStart = 0;  // where the open Markdown starts (>= m_mdStart)
    size_t m_checkedEnd = 0; // complete lines up to here were already searched for a cut
    bool m_finished = false;
    size_t m_parsedBytes = 0;
    int m_reconciled = 0;
};

} // namespace coli::markdown
