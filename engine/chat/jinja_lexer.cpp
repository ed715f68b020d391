#include "chat/jinja_lexer.h"

#include "core/strings.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace coli::jinja {

SourceMap::SourceMap(const std::string& normalized) : m_src(normalized) {
    m_lineStarts.push_back(0);
    for (size_t i = 0; i < normalized.size(); ++i) {
        if (normalized[i] == '\n') m_lineStarts.push_back(i + 1);
    }
}

std::pair<int, int> SourceMap::position(size_t offset) const {
    size_t line = 0;
    while (line + 1 < m_lineStarts.size() && m_lineStarts[line + 1] <= offset)
        ++line;
    size_t start = m_lineStarts[line];
    int col = 1;
    for (size_t i = start; i < offset && i < m_src.size(); ++i) {
        if ((static_cast<unsigned char>(m_src[i]) & 0xc0) != 0x80) ++col;
    }
    return {int(line) + 1, col};
}

std::string normalizeNewlines(const std::string& source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

namespace {

class Lexer {
public:
    explicit Lexer(const std::string& src) : m_src(src), m_map(src) {}

    std::vector<Token> run() {
        bool lineStarting = true;
        while (m_pos < m_src.size()) {
            size_t tag = findTagStart(m_pos);
            if (tag == std::string::npos) {
                pushData(m_src.substr(m_pos), m_pos);
                m_pos = m_src.size();
                break;
            }
            char kind = m_src[tag + 1]; // '{', '%' or '#'
            char control = tag + 2 < m_src.size() ? m_src[tag + 2] : '\0';
            std::string text = m_src.substr(m_pos, tag - m_pos);
            if (control == '-') {
                text = rstripWhitespace(text);
            } else if (control != '+' && kind != '{') {
                // lstrip_blocks: drop spaces/tabs between the line start and a block or comment.
                size_t lpos = text.rfind('\n');
                lpos = lpos == std::string::npos ? 0 : lpos + 1;
                if (lpos > 0 || lineStarting) {
                    bool onlyBlank = text.find_first_not_of(" \t", lpos) == std::string::npos;
                    if (onlyBlank) text.erase(lpos);
                }
            }
            pushData(text, m_pos);
            m_pos = tag + 2 + ((control == '-' || control == '+') ? 1 : 0);
            if (kind == '#') {
                lineStarting = lexComment(tag);
            } else {
                lineStarting = lexTag(kind == '{', tag);
            }
        }
        Token eof;
        eof.kind = TokKind::Eof;
        eof.offset = m_src.size();
        m_out.push_back(eof);
        return std::move(m_out);
    }

private:
    [[noreturn]] void error(ErrorCode code, size_t offset, const std::string& msg) {
        auto [line, col] = m_map.position(offset);
        throw JinjaError{code, msg, line, col};
    }

    size_t findTagStart(size_t from) const {
        for (size_t i = from; i + 1 < m_src.size(); ++i) {
            if (m_src[i] == '{') {
                char c = m_src[i + 1];
                if (c == '{' || c == '%' || c == '#') return i;
            }
        }
        return std::string::npos;
    }

    void pushData(const std::string& text, size_t offset) {
        if (text.empty()) return;
        Token t;
        t.kind = TokKind::Data;
        t.text = text;
        t.offset = offset;
        m_out.push_back(std::move(t));
    }

    static std::string rstripWhitespace(const std::string& s) {
        std::u32string cps = utf8Decode(s);
        size_t n = cps.size();
        while (n > 0 && isPyWhitespace(cps[n - 1]))
            --n;
        return utf8Encode(cps.substr(0, n));
    }

    // Skips Python whitespace (the "\s*" after "-%}"); returns whether the skipped run ended
    // with "\n" (jinja's line_starting).
    bool skipWhitespace() {
        bool endedWithNewline = false;
        while (m_pos < m_src.size()) {
            size_t len = 1;
            unsigned char c = static_cast<unsigned char>(m_src[m_pos]);
            char32_t cp = c;
            if (c >= 0x80) {
                len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
                std::u32string d = utf8Decode(m_src.substr(m_pos, len));
                cp = d.empty() ? 0 : d[0];
            }
            if (!isPyWhitespace(cp)) break;
            endedWithNewline = cp == '\n';
            m_pos += len;
        }
        return endedWithNewline;
    }

    // Handles what follows an end marker; returns jinja's line_starting.
    bool afterEnd(char control, bool isVariable) {
        if (control == '-') return skipWhitespace();
        if (control == '+' || isVariable) return false;
        if (m_pos < m_src.size() && m_src[m_pos] == '\n') { // trim_blocks
            ++m_pos;
            return true;
        }
        return false;
    }

    bool lexComment(size_t tagStart) {
        size_t end = m_src.find("#}", m_pos);
        if (end == std::string::npos) error(ErrorCode::Malformed, tagStart, "unterminated comment");
        char control = end > m_pos ? m_src[end - 1] : '\0';
        if (control != '-' && control != '+') control = '\0';
        m_pos = end + 2;
        return afterEnd(control, false);
    }

    bool lexTag(bool isVariable, size_t tagStart) {
        Token begin;
        begin.kind = isVariable ? TokKind::VarBegin : TokKind::BlockBegin;
        begin.offset = tagStart;
        m_out.push_back(begin);
        if (!isVariable) {
            size_t p = m_pos;
            while (p < m_src.size() && (m_src[p] == ' ' || m_src[p] == '\t' || m_src[p] == '\n'))
                ++p;
            if (m_src.compare(p, 3, "raw") == 0 &&
                (p + 3 >= m_src.size() || !isNameChar(m_src[p + 3]))) {
                error(ErrorCode::Unsupported, tagStart, "{% raw %} blocks are not supported");
            }
        }
        int depth = 0;
        while (true) {
            if (m_pos >= m_src.size()) {
                error(ErrorCode::Malformed, tagStart,
                      isVariable ? "unexpected end of template: '{{' without '}}'"
                                 : "unexpected end of template: '{%' without '%}'");
            }
            if (depth == 0) {
                const char* end = isVariable ? "}}" : "%}";
                for (char control : {'-', '+', '\0'}) {
                    if (control == '+' && isVariable) continue;
                    size_t p = m_pos;
                    if (control != '\0') {
                        if (m_src[p] != control) continue;
                        ++p;
                    }
                    if (m_src.compare(p, 2, end) == 0) {
                        Token t;
                        t.kind = isVariable ? TokKind::VarEnd : TokKind::BlockEnd;
                        t.offset = m_pos;
                        m_out.push_back(t);
                        m_pos = p + 2;
                        return afterEnd(control, isVariable);
                    }
                }
            }
            char c = m_src[m_pos];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
                ++m_pos;
            } else if (c >= '0' && c <= '9') {
                lexNumber();
            } else if (isNameStart(c)) {
                size_t start = m_pos;
                while (m_pos < m_src.size() && isNameChar(m_src[m_pos]))
                    ++m_pos;
                Token t;
                t.kind = TokKind::Name;
                t.text = m_src.substr(start, m_pos - start);
                t.offset = start;
                m_out.push_back(std::move(t));
            } else if (c == '\'' || c == '"') {
                lexString();
            } else {
                lexOperator(depth);
            }
        }
    }

    static bool isNameStart(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    }
    static bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }
    static bool isDigit(char c) { return c >= '0' && c <= '9'; }

    void lexNumber() {
        size_t start = m_pos;
        auto digits = [&] {
            while (m_pos < m_src.size() && (isDigit(m_src[m_pos]) || m_src[m_pos] == '_'))
                ++m_pos;
        };
        digits();
        bool isFloat = false;
        if (m_pos + 1 < m_src.size() && m_src[m_pos] == '.' && isDigit(m_src[m_pos + 1])) {
            isFloat = true;
            ++m_pos;
            digits();
        }
        if (m_pos < m_src.size() && (m_src[m_pos] == 'e' || m_src[m_pos] == 'E')) {
            size_t p = m_pos + 1;
            if (p < m_src.size() && (m_src[p] == '+' || m_src[p] == '-')) ++p;
            if (p < m_src.size() && isDigit(m_src[p])) {
                isFloat = true;
                m_pos = p;
                digits();
            }
        }
        std::string text;
        for (size_t i = start; i < m_pos; ++i) {
            if (m_src[i] != '_') text += m_src[i];
        }
        Token t;
        t.offset = start;
        t.text = text;
        if (isFloat) {
            t.kind = TokKind::Float;
            t.floatValue = std::strtod(text.c_str(), nullptr);
        } else {
            t.kind = TokKind::Int;
            errno = 0;
            t.intValue = std::strtoll(text.c_str(), nullptr, 10);
            if (errno == ERANGE) error(ErrorCode::Unsupported, start, "integer literal too large");
        }
        m_out.push_back(std::move(t));
    }

    void lexString() {
        size_t start = m_pos;
        char quote = m_src[m_pos++];
        std::string value;
        while (true) {
            if (m_pos >= m_src.size()) error(ErrorCode::Malformed, start, "unterminated string");
            char c = m_src[m_pos];
            if (c == quote) {
                ++m_pos;
                break;
            }
            if (c != '\\') {
                value += c;
                ++m_pos;
                continue;
            }
            // Python "unicode-escape" decoding, as jinja2 applies to string literals.
            if (m_pos + 1 >= m_src.size())
                error(ErrorCode::Malformed, start, "unterminated string");
            char e = m_src[m_pos + 1];
            m_pos += 2;
            switch (e) {
            case '\n':
                break; // line continuation
            case '\\':
                value += '\\';
                break;
            case '\'':
                value += '\'';
                break;
            case '"':
                value += '"';
                break;
            case 'a':
                value += '\a';
                break;
            case 'b':
                value += '\b';
                break;
            case 'f':
                value += '\f';
                break;
            case 'n':
                value += '\n';
                break;
            case 'r':
                value += '\r';
                break;
            case 't':
                value += '\t';
                break;
            case 'v':
                value += '\v';
                break;
            case 'x':
                value += hexEscape(2, start);
                break;
            case 'u':
                value += hexEscape(4, start);
                break;
            case 'U':
                value += hexEscape(8, start);
                break;
            case 'N':
                error(ErrorCode::Unsupported, start, "\\N{...} escapes are not supported");
            default:
                if (e >= '0' && e <= '7') {
                    unsigned v = unsigned(e - '0');
                    for (int k = 0; k < 2 && m_pos < m_src.size() && m_src[m_pos] >= '0' &&
                                    m_src[m_pos] <= '7';
                         ++k)
                        v = v * 8 + unsigned(m_src[m_pos++] - '0');
                    appendUtf8(value, char32_t(v));
                } else {
                    value += '\\';
                    value += e;
                }
            }
        }
        Token t;
        t.kind = TokKind::String;
        t.text = std::move(value);
        t.offset = start;
        m_out.push_back(std::move(t));
    }

    std::string hexEscape(int n, size_t start) {
        if (m_pos + size_t(n) > m_src.size()) error(ErrorCode::Malformed, start, "bad escape");
        std::string hex = m_src.substr(m_pos, size_t(n));
        for (char h : hex) {
            if (!std::isxdigit(static_cast<unsigned char>(h)))
                error(ErrorCode::Malformed, start, "bad \\x/\\u escape in string");
        }
        m_pos += size_t(n);
        std::string out;
        appendUtf8(out, char32_t(std::strtoul(hex.c_str(), nullptr, 16)));
        return out;
    }

    void lexOperator(int& depth) {
        static const char* twoChar[] = {"//", "**", "==", "!=", "<=", ">="};
        Token t;
        t.kind = TokKind::Op;
        t.offset = m_pos;
        for (const char* op : twoChar) {
            if (m_src.compare(m_pos, 2, op) == 0) {
                t.text = op;
                m_pos += 2;
                m_out.push_back(std::move(t));
                return;
            }
        }
        char c = m_src[m_pos];
        static const std::string single = "+-/*%~[](){}<>=.:|,";
        if (single.find(c) == std::string::npos) {
            error(ErrorCode::Malformed, m_pos, std::string("unexpected character '") + c + "'");
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        if (c == ')' || c == ']' || c == '}') {
            if (depth == 0)
                error(ErrorCode::Malformed, m_pos, std::string("unexpected '") + c + "'");
            --depth;
        }
        t.text = std::string(1, c);
        ++m_pos;
        m_out.push_back(std::move(t));
    }

    const std::string& m_src;
    SourceMap m_map;
    size_t m_pos = 0;
    std::vector<Token> m_out;
};

} // namespace

std::vector<Token> tokenize(const std::string& normalized) {
    return Lexer(normalized).run();
}

} // namespace coli::jinja
