#include "markdown/markdown_blocks.h"

#include <md4c.h>

#include <algorithm>
#include <cstring>

namespace coli::markdown {

namespace {

// GitHub's dialect (tables, strikethrough, task lists, permissive autolinks) with raw HTML off:
// an HTML tag in an answer is text.
constexpr unsigned kParserFlags = MD_FLAG_PERMISSIVEAUTOLINKS | MD_FLAG_TABLES |
                                  MD_FLAG_STRIKETHROUGH | MD_FLAG_TASKLISTS | MD_FLAG_NOHTML;

constexpr size_t kNone = std::string::npos;

// A top-level block and where its text lies in the input (the first and one past the last byte
// md4c pointed at; kNone when it pointed at none, e.g. a thematic break).
struct Anchored {
    Block block;
    size_t first = kNone;
    size_t last = kNone;
};

bool asciiIEquals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return (x >= 'A' && x <= 'Z' ? x + 32 : x) == (y >= 'A' && y <= 'Z' ? y + 32 : y);
           });
}

// An entity as md4c reports it (&name; &#123; &#x1F;): passed to Qt, which decodes it, when it
// is made only of the characters an entity may hold; escaped otherwise.
bool isPlainEntity(std::string_view e) {
    if (e.size() < 3 || e.front() != '&' || e.back() != ';') return false;
    for (char c : e.substr(1, e.size() - 2))
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '#'))
            return false;
    return true;
}

class Renderer {
public:
    Renderer(std::string_view src, const RenderOptions& opt) : m_src(src), m_opt(opt) {}

    std::vector<Anchored> run() {
        MD_PARSER p{};
        p.abi_version = 0;
        p.flags = kParserFlags;
        p.enter_block = [](MD_BLOCKTYPE t, void* d, void* u) {
            return static_cast<Renderer*>(u)->enterBlock(t, d);
        };
        p.leave_block = [](MD_BLOCKTYPE t, void* d, void* u) {
            return static_cast<Renderer*>(u)->leaveBlock(t, d);
        };
        p.enter_span = [](MD_SPANTYPE t, void* d, void* u) {
            return static_cast<Renderer*>(u)->enterSpan(t, d);
        };
        p.leave_span = [](MD_SPANTYPE t, void* d, void* u) {
            return static_cast<Renderer*>(u)->leaveSpan(t, d);
        };
        p.text = [](MD_TEXTTYPE t, const MD_CHAR* s, MD_SIZE n, void* u) {
            return static_cast<Renderer*>(u)->text(t, s, n);
        };
        md_parse(m_src.data(), MD_SIZE(m_src.size()), &p, this);
        return std::move(m_out);
    }

private:
    Anchored& cur() { return m_out.back(); }
    std::string& html() { return cur().block.html; }
    std::string& plain() { return cur().block.text; }

    void anchor(const char* s, size_t n) {
        if (m_out.empty() || s < m_src.data() || s + n > m_src.data() + m_src.size()) return;
        const size_t off = size_t(s - m_src.data());
        Anchored& a = cur();
        if (a.first == kNone || off < a.first) a.first = off;
        if (a.last == kNone || off + n > a.last) a.last = off + n;
    }

    std::string attr(const MD_ATTRIBUTE& a) {
        anchor(a.text, a.size);
        return std::string(a.text, a.size);
    }

    std::string monoStyle() const {
        return " style=\"font-family:'" + escapeHtml(m_opt.monoFamily) + "'\"";
    }

    int enterBlock(MD_BLOCKTYPE t, void* d) {
        if (t == MD_BLOCK_DOC) return 0;
        if (++m_depth == 1) {
            m_out.emplace_back();
            if (t == MD_BLOCK_CODE) {
                auto* c = static_cast<MD_BLOCK_CODE_DETAIL*>(d);
                cur().block.kind = BlockKind::Code;
                attr(c->info); // the fence's line, for the cut search
                cur().block.language = attr(c->lang);
                return 0;
            }
        }
        if (cur().block.kind == BlockKind::Code) return 0;
        switch (t) {
        case MD_BLOCK_QUOTE:
            html() += "<blockquote>";
            break;
        case MD_BLOCK_UL:
            html() += "<ul>";
            break;
        case MD_BLOCK_OL: {
            const unsigned start = static_cast<MD_BLOCK_OL_DETAIL*>(d)->start;
            html() += start == 1 ? "<ol>" : "<ol start=\"" + std::to_string(start) + "\">";
            break;
        }
        case MD_BLOCK_LI: {
            html() += "<li>";
            auto* li = static_cast<MD_BLOCK_LI_DETAIL*>(d);
            if (li->is_task) {
                const bool done = li->task_mark == 'x' || li->task_mark == 'X';
                html() += done ? "\u2611 " : "\u2610 "; // ballot box (with check)
                plain() += done ? "[x] " : "[ ] ";
            }
            break;
        }
        case MD_BLOCK_HR:
            html() += "<hr/>";
            break;
        case MD_BLOCK_H: {
            // Qt's heading sizes (h1 xx-large) dwarf a chat column: one step smaller each.
            static constexpr const char* kSize[] = {"x-large", "large", "medium"};
            const unsigned level = static_cast<MD_BLOCK_H_DETAIL*>(d)->level;
            html() += "<h" + std::to_string(level) +
                      " style=\"font-size:" + kSize[std::min(level, 3u) - 1] + "\">";
            break;
        }
        case MD_BLOCK_CODE: // nested in a list or quote: part of the prose block
        case MD_BLOCK_HTML: // not produced (MD_FLAG_NOHTML); shown as text if it were
            html() += "<pre" + monoStyle() + ">";
            break;
        case MD_BLOCK_P:
            html() += "<p>";
            break;
        case MD_BLOCK_TABLE:
            html() += "<table border=\"1\" cellspacing=\"0\" cellpadding=\"4\">";
            break;
        case MD_BLOCK_TR:
            html() += "<tr>";
            break;
        case MD_BLOCK_TH:
        case MD_BLOCK_TD: {
            const auto align = static_cast<MD_BLOCK_TD_DETAIL*>(d)->align;
            std::string tag = t == MD_BLOCK_TH ? "<th" : "<td";
            if (align == MD_ALIGN_CENTER) tag += " align=\"center\"";
            if (align == MD_ALIGN_RIGHT) tag += " align=\"right\"";
            html() += tag + ">";
            break;
        }
        default: // THEAD, TBODY: Qt needs no section tags
            break;
        }
        return 0;
    }

    int leaveBlock(MD_BLOCKTYPE t, void* d) {
        if (t == MD_BLOCK_DOC) return 0;
        const bool top = m_depth-- == 1;
        Block& b = cur().block;
        if (b.kind == BlockKind::Code) {
            if (top && !b.text.empty() && b.text.back() == '\n') b.text.pop_back();
            return 0;
        }
        switch (t) {
        case MD_BLOCK_QUOTE:
            html() += "</blockquote>";
            break;
        case MD_BLOCK_UL:
            html() += "</ul>";
            break;
        case MD_BLOCK_OL:
            html() += "</ol>";
            break;
        case MD_BLOCK_LI:
            html() += "</li>";
            newline();
            break;
        case MD_BLOCK_HR:
            plain() += "---";
            newline();
            break;
        case MD_BLOCK_H:
            html() += "</h" + std::to_string(static_cast<MD_BLOCK_H_DETAIL*>(d)->level) + ">";
            newline();
            break;
        case MD_BLOCK_CODE:
        case MD_BLOCK_HTML:
            html() += "</pre>";
            newline();
            break;
        case MD_BLOCK_P:
            html() += "</p>";
            newline();
            break;
        case MD_BLOCK_TABLE:
            html() += "</table>";
            break;
        case MD_BLOCK_TR:
            html() += "</tr>";
            newline();
            break;
        case MD_BLOCK_TH:
            html() += "</th>";
            plain() += '\t';
            break;
        case MD_BLOCK_TD:
            html() += "</td>";
            plain() += '\t';
            break;
        default:
            break;
        }
        if (top)
            while (!plain().empty() && (plain().back() == '\n' || plain().back() == '\t'))
                plain().pop_back();
        return 0;
    }

    void newline() {
        if (!plain().empty() && plain().back() != '\n') plain() += '\n';
    }

    int enterSpan(MD_SPANTYPE t, void* d) {
        if (m_imageDepth > 0) { // inside an image's alt text: text only
            if (t == MD_SPAN_IMG) ++m_imageDepth;
            return 0;
        }
        switch (t) {
        case MD_SPAN_EM:
            html() += "<i>";
            break;
        case MD_SPAN_STRONG:
            html() += "<b>";
            break;
        case MD_SPAN_DEL:
            html() += "<s>";
            break;
        case MD_SPAN_U:
            html() += "<u>";
            break;
        case MD_SPAN_CODE:
            html() += "<code" + monoStyle() + ">";
            break;
        case MD_SPAN_A: {
            std::string href = attr(static_cast<MD_SPAN_A_DETAIL*>(d)->href);
            if (href.rfind("www.", 0) == 0) href = "http://" + href; // permissive autolink
            const bool link = m_linkDepth == 0 && isAllowedLink(href);
            m_links.push_back(link);
            if (link) {
                ++m_linkDepth;
                html() += "<a href=\"" + escapeHtml(href) + "\">";
            }
            break;
        }
        case MD_SPAN_IMG:
            ++m_imageDepth;
            m_imageSrc = attr(static_cast<MD_SPAN_IMG_DETAIL*>(d)->src);
            m_imageAlt.clear();
            break;
        default: // LATEXMATH (not enabled), WIKILINK (not enabled): text only
            break;
        }
        return 0;
    }

    int leaveSpan(MD_SPANTYPE t, void*) {
        if (m_imageDepth > 0) {
            if (t != MD_SPAN_IMG || --m_imageDepth > 0) return 0;
            // The image as text: never an <img>, so nothing is fetched.
            const std::string label = m_imageAlt.empty() ? m_imageSrc : m_imageAlt;
            const bool link = m_linkDepth == 0 && isAllowedLink(m_imageSrc);
            if (link) html() += "<a href=\"" + escapeHtml(m_imageSrc) + "\">";
            html() += escapeHtml(label);
            if (link) html() += "</a>";
            plain() += label;
            return 0;
        }
        switch (t) {
        case MD_SPAN_EM:
            html() += "</i>";
            break;
        case MD_SPAN_STRONG:
            html() += "</b>";
            break;
        case MD_SPAN_DEL:
            html() += "</s>";
            break;
        case MD_SPAN_U:
            html() += "</u>";
            break;
        case MD_SPAN_CODE:
            html() += "</code>";
            break;
        case MD_SPAN_A:
            if (!m_links.empty()) {
                if (m_links.back()) {
                    --m_linkDepth;
                    html() += "</a>";
                }
                m_links.pop_back();
            }
            break;
        default:
            break;
        }
        return 0;
    }

    int text(MD_TEXTTYPE t, const MD_CHAR* s, MD_SIZE n) {
        if (m_out.empty()) return 0;
        anchor(s, n);
        const std::string_view sv(s, n);
        Block& b = cur().block;
        if (b.kind == BlockKind::Code) {
            b.text += t == MD_TEXT_NULLCHAR ? std::string_view("\uFFFD") : sv;
            return 0;
        }
        if (m_imageDepth > 0) {
            if (t != MD_TEXT_BR && t != MD_TEXT_SOFTBR)
                m_imageAlt += sv;
            else
                m_imageAlt += ' ';
            return 0;
        }
        switch (t) {
        case MD_TEXT_NULLCHAR:
            b.html += "\uFFFD";
            b.text += "\uFFFD";
            break;
        case MD_TEXT_BR:
            b.html += "<br/>";
            b.text += '\n';
            break;
        case MD_TEXT_SOFTBR:
            b.html += '\n';
            b.text += '\n';
            break;
        case MD_TEXT_ENTITY:
            b.html += isPlainEntity(sv) ? std::string(sv) : escapeHtml(sv);
            b.text += sv;
            break;
        default: // NORMAL, CODE, HTML (raw HTML is text here), LATEXMATH
            b.html += escapeHtml(sv);
            b.text += sv;
            break;
        }
        return 0;
    }

    std::string_view m_src;
    const RenderOptions& m_opt;
    std::vector<Anchored> m_out;
    int m_depth = 0;
    int m_linkDepth = 0;       // open <a> elements we emitted (never nested)
    std::vector<bool> m_links; // per open link span: whether it became an <a>
    int m_imageDepth = 0;
    std::string m_imageSrc, m_imageAlt;
};

std::vector<Anchored> parseAnchored(std::string_view md, const RenderOptions& opt) {
    return Renderer(md, opt).run();
}

bool sameBlocks(const std::vector<Anchored>& a, const std::vector<Anchored>& b,
                const std::vector<Anchored>& whole) {
    if (a.size() + b.size() != whole.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!(a[i].block == whole[i].block)) return false;
    for (size_t i = 0; i < b.size(); ++i)
        if (!(b[i].block == whole[a.size() + i].block)) return false;
    return true;
}

size_t lineStartOf(std::string_view s, size_t pos) {
    const size_t nl = pos == 0 ? kNone : s.rfind('\n', pos - 1);
    return nl == kNone ? 0 : nl + 1;
}

std::string_view trimNewlines(std::string_view s) {
    while (!s.empty() && (s.front() == '\n' || s.front() == '\r' || s.front() == ' '))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
        s.remove_suffix(1);
    return s;
}

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

} // namespace

std::string escapeHtml(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    for (char c : text) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

bool isAllowedLink(std::string_view url) {
    const size_t colon = url.find(':');
    if (colon == std::string_view::npos) return false;
    const std::string_view scheme = url.substr(0, colon);
    return asciiIEquals(scheme, "http") || asciiIEquals(scheme, "https") ||
           asciiIEquals(scheme, "mailto");
}

std::vector<Block> parseBlocks(std::string_view markdown, const RenderOptions& opt) {
    std::vector<Block> out;
    for (Anchored& a : parseAnchored(markdown, opt))
        out.push_back(std::move(a.block));
    return out;
}

std::vector<Block> BlockStream::parse(std::string_view md) {
    m_parsedBytes += md.size();
    return parseBlocks(md, m_opt);
}

void BlockStream::clear() {
    *this = BlockStream(std::move(m_opt));
}

void BlockStream::updateThink() {
    if (m_think == Think::Undecided) {
        const size_t i = m_text.find_first_not_of(" \t\r\n");
        if (i == kNone) return;
        const std::string_view rest = std::string_view(m_text).substr(i);
        if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
            m_think = Think::Open;
            m_mdStart = i + kThinkOpen.size(); // the reasoning starts here until </think>
        } else if (kThinkOpen.substr(0, rest.size()) == rest && !m_finished) {
            return; // "<thi": wait for the next piece
        } else {
            m_think = Think::None;
            return;
        }
    }
    if (m_think != Think::Open) return;
    // Search only where a new "</think>" can be: from the last search's end, less its length.
    const size_t from =
        std::max(m_mdStart,
                 m_checkedEnd > kThinkClose.size() ? m_checkedEnd - kThinkClose.size() : size_t(0));
    const size_t close = m_text.find(kThinkClose, from);
    std::string_view reasoning = std::string_view(m_text).substr(m_mdStart);
    if (close != kNone)
        reasoning = reasoning.substr(0, close - m_mdStart);
    else {
        m_checkedEnd = m_text.size();
        // A partial "</think>" at the end is not shown.
        for (size_t n = std::min(kThinkClose.size() - 1, reasoning.size()); n > 0; --n)
            if (reasoning.substr(reasoning.size() - n) == kThinkClose.substr(0, n)) {
                reasoning.remove_suffix(n);
                break;
            }
    }
    Block think;
    think.kind = BlockKind::Think;
    think.text = std::string(trimNewlines(reasoning));
    m_blocks.assign(1, std::move(think));
    m_finalCount = 0;
    if (close != kNone) {
        m_think = Think::Closed;
        m_finalCount = 1;
        m_mdStart = m_openStart = m_checkedEnd = close + kThinkClose.size();
    }
}

void BlockStream::tryCut() {
    const size_t nl = m_text.rfind('\n');
    if (nl == kNone || nl < m_openStart) return;
    const size_t end = nl + 1;
    if (end <= m_checkedEnd) return; // no line completed since the last search
    m_checkedEnd = end;
    const std::string_view open = std::string_view(m_text).substr(m_openStart, end - m_openStart);
    m_parsedBytes += open.size();
    const std::vector<Anchored> whole = parseAnchored(open, m_opt);
    if (whole.size() < 2) return;
    // The last block starts at or before the line of its first byte (a fence or marker line may
    // come first), and after the last byte of any block before it.
    size_t lo = 1;
    for (size_t i = 0; i + 1 < whole.size(); ++i)
        if (whole[i].last != kNone) lo = std::max(lo, whole[i].last);
    size_t hi = whole.back().first != kNone ? lineStartOf(open, whole.back().first)
                                            : lineStartOf(open, open.size() - 1);
    // Latest valid cut first: the fewest bytes stay open.
    for (size_t p = hi; p >= lo && p > 0; p = lineStartOf(open, p - 1)) {
        const std::vector<Anchored> a = parseAnchored(open.substr(0, p), m_opt);
        const std::vector<Anchored> b = parseAnchored(open.substr(p), m_opt);
        m_parsedBytes += open.size();
        if (!a.empty() && sameBlocks(a, b, whole)) {
            m_blocks.resize(m_finalCount);
            for (const Anchored& x : a)
                m_blocks.push_back(x.block);
            m_finalCount = m_blocks.size();
            m_openStart += p;
            return;
        }
        if (p == 0) break;
    }
}

void BlockStream::append(std::string_view piece) {
    m_text.append(piece);
    if (m_think == Think::Undecided || m_think == Think::Open) {
        updateThink();
        if (m_think == Think::Undecided || m_think == Think::Open) return;
    }
    tryCut();
    std::vector<Block> open = parse(std::string_view(m_text).substr(m_openStart));
    m_blocks.resize(m_finalCount);
    for (Block& b : open)
        m_blocks.push_back(std::move(b));
}

void BlockStream::finish() {
    m_finished = true;
    if (m_think == Think::Undecided) append({}); // "<thi" at the end is text
    if (m_think == Think::Open || m_think == Think::Undecided) return;
    // md4c is not perfectly context-free at a valid cut (e.g. "10. x" followed by two blank lines
    // and an indented line parses differently at the start of a document): make the finished
    // answer look exactly as its whole text parses, as it will when it is shown again later.
    std::vector<Block> whole = parse(std::string_view(m_text).substr(m_mdStart));
    const size_t first = m_think == Think::Closed ? 1 : 0;
    if (std::equal(m_blocks.begin() + long(first), m_blocks.end(), whole.begin(), whole.end()))
        return;
    m_blocks.resize(first);
    for (Block& b : whole)
        m_blocks.push_back(std::move(b));
    m_finalCount = first;
    m_openStart = m_checkedEnd = m_mdStart;
    ++m_reconciled;
}

} // namespace coli::markdown
