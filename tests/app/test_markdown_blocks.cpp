// The Qt-free Markdown splitter (app/markdown/markdown_blocks.h): top-level blocks and their
// kinds, safe HTML (no image is ever an <img>, raw HTML is text, only http/https/mailto links),
// <think> blocks, and the streaming invariant: final blocks never change, and a streamed answer
// ends as the whole text parses.
#include "markdown/markdown_blocks.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

using namespace coli::markdown;

namespace {

std::vector<BlockKind> kinds(const std::vector<Block>& bs) {
    std::vector<BlockKind> k;
    for (const Block& b : bs)
        k.push_back(b.kind);
    return k;
}

constexpr auto P = BlockKind::Prose;
constexpr auto C = BlockKind::Code;
constexpr auto T = BlockKind::Think;

} // namespace

TEST(MarkdownBlocks, TopLevelBlocksAndCodeLanguages) {
    const std::string md = "# Title\n"
                           "Some *text* with `code`.\n"
                           "```python title=x\n"
                           "def f():\n"
                           "    return 1\n"
                           "```\n"
                           "- one\n"
                           "- two\n"
                           "\n"
                           "> quoted\n"
                           "\n"
                           "| a | b |\n"
                           "|---|--:|\n"
                           "| 1 | 2 |\n"
                           "\n"
                           "---\n"
                           "~~~\n"
                           "plain\n"
                           "~~~\n"
                           "\n"
                           "    indented code\n";
    const auto bs = parseBlocks(md);
    ASSERT_EQ(kinds(bs), (std::vector<BlockKind>{P, P, C, P, P, P, P, C, C}));
    EXPECT_EQ(bs[0].html, "<h1 style=\"font-size:x-large\">Title</h1>");
    EXPECT_EQ(bs[0].text, "Title");
    EXPECT_NE(bs[1].html.find("<i>text</i>"), std::string::npos);
    EXPECT_NE(bs[1].html.find("<code style=\"font-family:'DejaVu Sans Mono'\">code</code>"),
              std::string::npos);
    EXPECT_EQ(bs[2].language, "python");
    EXPECT_EQ(bs[2].text, "def f():\n    return 1");
    EXPECT_EQ(bs[3].text, "one\ntwo");
    EXPECT_NE(bs[5].html.find("<table"), std::string::npos);
    EXPECT_NE(bs[5].html.find("<td align=\"right\">2</td>"), std::string::npos);
    EXPECT_EQ(bs[6].html, "<hr/>");
    EXPECT_EQ(bs[7].language, "");
    EXPECT_EQ(bs[7].text, "plain");
    EXPECT_EQ(bs[8].text, "indented code");
}

TEST(MarkdownBlocks, CodeInsideAListStaysInTheProseBlock) {
    const auto bs = parseBlocks("1. step\n\n   ```sh\n   ls -l\n   ```\n2. next\n");
    ASSERT_EQ(kinds(bs), (std::vector<BlockKind>{P}));
    EXPECT_NE(bs[0].html.find("<pre style=\"font-family:'DejaVu Sans Mono'\">ls -l\n</pre>"),
              std::string::npos)
        << bs[0].html;
}

TEST(MarkdownBlocks, RawHtmlIsText) {
    const auto bs = parseBlocks("Say <b>x</b> & <script>alert(1)</script>\n\n<div>\n*y*\n</div>\n");
    ASSERT_EQ(bs.size(), 2u);
    EXPECT_NE(bs[0].html.find("Say &lt;b&gt;x&lt;/b&gt; &amp; &lt;script&gt;"), std::string::npos)
        << bs[0].html;
    EXPECT_EQ(bs[0].text, "Say <b>x</b> & <script>alert(1)</script>");
    EXPECT_EQ(bs[0].html.find("<b>"), std::string::npos);
    EXPECT_EQ(bs[0].html.find("<script"), std::string::npos);
    EXPECT_NE(bs[1].html.find("&lt;div&gt;"), std::string::npos) << bs[1].html;
    EXPECT_EQ(bs[1].html.find("<div"), std::string::npos);
    // An entity is passed to Qt as an entity: it shows "<b>", never makes a tag.
    const auto e = parseBlocks("&lt;b&gt; &copy; &#60;i&#62;\n");
    EXPECT_NE(e[0].html.find("&lt;b&gt; &copy; &#60;i&#62;"), std::string::npos) << e[0].html;
}

TEST(MarkdownBlocks, ImagesAreNeverImgElements) {
    const auto bs = parseBlocks("![a cat](http://127.0.0.1:9/cat.png) "
                                "<img src=\"http://127.0.0.1:9/x.png\"> "
                                "![](file:///etc/passwd) ![logo](data:image/png;base64,AAAA) "
                                "[![inner](http://127.0.0.1:9/i.png)](https://example.org/)\n");
    ASSERT_EQ(bs.size(), 1u);
    const std::string& h = bs[0].html;
    EXPECT_EQ(h.find("<img"), std::string::npos) << h;
    EXPECT_NE(h.find("<a href=\"http://127.0.0.1:9/cat.png\">a cat</a>"), std::string::npos) << h;
    EXPECT_NE(h.find("&lt;img src=&quot;http://127.0.0.1:9/x.png&quot;&gt;"), std::string::npos);
    // Not an allowed link: the URL as text, no anchor.
    EXPECT_NE(h.find("file:///etc/passwd"), std::string::npos);
    EXPECT_EQ(h.find("href=\"file:"), std::string::npos);
    EXPECT_EQ(h.find("href=\"data:"), std::string::npos);
    // An image inside a link: the link's anchor only (no nested <a>).
    EXPECT_NE(h.find("<a href=\"https://example.org/\">inner</a>"), std::string::npos) << h;
}

TEST(MarkdownBlocks, OnlyWebAndMailLinksAreLinks) {
    EXPECT_TRUE(isAllowedLink("https://example.org/a?b=c"));
    EXPECT_TRUE(isAllowedLink("HTTP://example.org"));
    EXPECT_TRUE(isAllowedLink("mailto:a@b.c"));
    EXPECT_FALSE(isAllowedLink("javascript:alert(1)"));
    EXPECT_FALSE(isAllowedLink("file:///etc/passwd"));
    EXPECT_FALSE(isAllowedLink("/relative/path"));
    EXPECT_FALSE(isAllowedLink("qrc:/x"));
    const auto bs = parseBlocks("[ok](https://a.example/?q=\"x\") [bad](javascript:alert(1)) "
                                "see www.example.org and https://b.example\n");
    const std::string& h = bs[0].html;
    EXPECT_NE(h.find("<a href=\"https://a.example/?q=&quot;x&quot;\">ok</a>"), std::string::npos)
        << h;
    EXPECT_EQ(h.find("javascript"), std::string::npos) << h; // the text "bad" only
    EXPECT_NE(h.find(" bad "), std::string::npos) << h;
    EXPECT_NE(h.find("<a href=\"http://www.example.org\">www.example.org</a>"), std::string::npos)
        << h;
    EXPECT_NE(h.find("<a href=\"https://b.example\">https://b.example</a>"), std::string::npos)
        << h;
}

TEST(MarkdownBlocks, ThinkBlockOpensTheAnswer) {
    BlockStream s;
    s.append("  <think>\nLet me see");
    ASSERT_EQ(kinds(s.blocks()), (std::vector<BlockKind>{T}));
    EXPECT_TRUE(s.thinkOpen());
    EXPECT_EQ(s.finalCount(), 0u);
    EXPECT_EQ(s.blocks()[0].text, "Let me see");
    s.append(".\n</thi"); // a partial closing tag is not shown
    EXPECT_EQ(s.blocks()[0].text, "Let me see.");
    EXPECT_TRUE(s.thinkOpen());
    s.append("nk>\n\n**Answer** here");
    EXPECT_FALSE(s.thinkOpen());
    ASSERT_EQ(kinds(s.blocks()), (std::vector<BlockKind>{T, P}));
    EXPECT_EQ(s.finalCount(), 1u);
    EXPECT_EQ(s.blocks()[0].text, "Let me see.");
    EXPECT_EQ(s.blocks()[1].html, "<p><b>Answer</b> here</p>");

    // Not at the start, or another tag: Markdown text (the tag shown literally).
    BlockStream t;
    t.append("Use <think> tags");
    EXPECT_FALSE(t.hasThink());
    EXPECT_EQ(t.blocks()[0].text, "Use <think> tags");
    // A partial "<think>" waits for the next piece; at the end of the answer it is text.
    BlockStream u;
    u.append("<thi");
    EXPECT_TRUE(u.blocks().empty());
    u.finish();
    ASSERT_EQ(u.blocks().size(), 1u);
    EXPECT_EQ(u.blocks()[0].text, "<thi");
}

namespace {

// Streams `text` in the given piece sizes; after every append, the final blocks must equal the
// ones reported final before (never changed), and at the end everything must equal a parse of
// the whole text (final blocks included: they were final for good).
void checkStream(const std::string& text, const std::vector<size_t>& sizes,
                 const std::string& label, bool mayReconcile = false) {
    BlockStream s;
    std::vector<Block> finals;
    size_t pos = 0, i = 0, lastOpen = 0;
    while (pos < text.size()) {
        const size_t n = std::min(sizes[i++ % sizes.size()], text.size() - pos);
        s.append(std::string_view(text).substr(pos, n));
        pos += n;
        ASSERT_GE(s.finalCount(), finals.size()) << label << " at " << pos;
        ASSERT_LE(s.finalCount(), s.blocks().size()) << label;
        for (size_t k = 0; k < finals.size(); ++k)
            ASSERT_EQ(s.blocks()[k], finals[k])
                << label << ": final block " << k << " changed at byte " << pos;
        finals.assign(s.blocks().begin(), s.blocks().begin() + long(s.finalCount()));
        ASSERT_GE(s.openOffset(), lastOpen) << label;
        lastOpen = s.openOffset();
    }
    const std::vector<Block> streamed = s.blocks();
    s.finish();
    if (!mayReconcile) {
        EXPECT_EQ(s.reconciledCount(), 0) << label << ": the streamed blocks differ from a parse "
                                          << "of the whole text";
        EXPECT_EQ(streamed, s.blocks()) << label;
    }
    std::vector<Block> expected;
    std::string md = text;
    if (s.hasThink()) {
        const size_t close = text.find("</think>");
        md = close == std::string::npos ? std::string() : text.substr(close + 8);
        expected.push_back(s.blocks()[0]);
    }
    for (Block& b : parseBlocks(md))
        expected.push_back(std::move(b));
    ASSERT_EQ(s.blocks().size(), expected.size()) << label;
    for (size_t k = 0; k < expected.size(); ++k)
        EXPECT_EQ(s.blocks()[k], expected[k]) << label << ": block " << k;
}

const std::vector<std::string>& trickyDocuments() {
    static const std::vector<std::string> docs = {
        "* a\n*** b\n\nPara\n***\nlast",
        "Foo\nbar\n---\n\nBaz\n===\n\nQux\n- \n",
        "| a | b |\n|---|:-:|\n| 1 | 2 |\n\nAfter\n| x |\n|---|\n",
        "Text:\n```\ncode\n```\nMore\n```js\nx()\n```",
        "intro\n\n```python\nunclosed\n\nstill code\n",
        "- a\n\n  b\n- c\n\nd\n\n  - e\n",
        "1. one\n2. two\n\n3) three\n10. ten\n",
        "    indented\n    code\n\npara\n\n    more code\n",
        "> quote\nlazy\n\n> q2\n>\n> q3\n\n>",
        "~~~~\n```\n~~~~\n````\n~~~\n````\n",
        "# H1\n## H2 ##\n#\n###### six\n####### seven\n",
        "para\n***\n---\n___\n- - -\n",
        "**bold\ncontinues** and _em\nphasis_\n\n`code\nspan`\n",
        "<div>\n*x*\n</div>\n\n<b>y</b>\n",
        "<think>\nreason *a*\nmore\n</think>\n\n# Answer\n\n```c\nint x;\n```\ndone",
        "- [ ] todo\n- [x] done\n\nText\n",
        "a\n\n\n\nb\n\n\n   c\n",
        "Setext\n==\nlist:\n- a\n- b\nnot list\n",
    };
    return docs;
}

} // namespace

TEST(MarkdownBlocks, StreamingNeverChangesFinalBlocks) {
    std::mt19937 rng(1234);
    for (size_t d = 0; d < trickyDocuments().size(); ++d) {
        const std::string& doc = trickyDocuments()[d];
        checkStream(doc, {1}, "doc " + std::to_string(d) + " by bytes");
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<size_t> sizes(16);
            for (size_t& s : sizes)
                s = 1 + rng() % 9;
            checkStream(doc, sizes, "doc " + std::to_string(d) + " trial " + std::to_string(trial));
        }
        if (HasFatalFailure()) return;
    }
}

// All the documents above joined: a long answer. Re-parsing stays proportional to the open part
// (each append parses from openOffset()), not to the whole answer.
TEST(MarkdownBlocks, StreamingReparsesOnlyTheOpenPart) {
    std::string doc;
    for (int r = 0; r < 4; ++r)
        for (const std::string& d : trickyDocuments())
            if (d.find("<think>") == std::string::npos && d.find("unclosed") == std::string::npos &&
                d.find("~~~~") == std::string::npos)
                doc += d + "\n\n";
    // The join contains "3) three\n10. ten\n\n\n    indented": cut before "10.", md4c parses
    // the indented line outside the list (in the whole text, inside it); finish() repairs it.
    checkStream(doc, {3, 5, 2, 7}, "joined", /*mayReconcile=*/true);
    BlockStream s;
    size_t quadratic = 0;
    for (size_t pos = 0; pos < doc.size(); pos += 4) {
        s.append(std::string_view(doc).substr(pos, 4));
        quadratic += s.text().size();
    }
    EXPECT_GT(s.finalCount(), 50u);
    EXPECT_EQ(s.finalCount() + 1, s.blocks().size()); // only the last block is open
    EXPECT_LT(s.parsedBytes(), quadratic / 10) << "re-parsing the whole answer per append?";
}
