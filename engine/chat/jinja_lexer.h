#pragma once
// Tokenizer for the Jinja2 template syntax with the settings transformers uses in
// apply_chat_template: trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False
// (jinja2/lexer.py: newlines are normalized to "\n" and one trailing newline is dropped;
// "{%-"/"{{-"/"{#-" strip all whitespace before the tag, "-%}"/"-}}"/"-#}" all whitespace after;
// with lstrip_blocks, spaces and tabs between a line start and "{%" or "{#" are removed unless
// the tag opens with "+"; with trim_blocks, one "\n" after "%}" or "#}" is removed unless the tag
// closes with "+%}"/"+#}").
// Comments are dropped here. Errors: JinjaError Malformed with line:column (unterminated tag,
// comment or string, unexpected character), Unsupported for {% raw %}.
// Thread-safety: pure functions.
#include "chat/jinja_value.h"

#include <cstddef>
#include <string>
#include <vector>

namespace coli::jinja {

enum class TokKind {
    Data,       // literal template text, already whitespace-controlled
    VarBegin,   // {{
    VarEnd,     // }}
    BlockBegin, // {%
    BlockEnd,   // %}
    Name,       // identifiers and keywords (and, or, not, in, is, if, else, true, none...)
    String,     // text holds the decoded value
    Int,
    Float,
    Op, // text holds the operator: + - * / // % ** ~ == != < > <= >= = . : | , ( ) [ ] { }
    Eof,
};

struct Token {
    TokKind kind = TokKind::Eof;
    std::string text;
    int64_t intValue = 0;
    double floatValue = 0.0;
    size_t offset = 0; // byte offset in the normalized source, for line:column
};

// Maps byte offsets of the normalized source to 1-based line:column (column in code points).
class SourceMap {
public:
    explicit SourceMap(const std::string& normalized);
    std::pair<int, int> position(size_t offset) const;

private:
    const std::string& m_src;
    std::vector<size_t> m_lineStarts;
};

// "\r\n" and "\r" become "\n"; one trailing "\n" is dropped (keep_trailing_newline=False).
std::string normalizeNewlines(const std::string& source);

// Tokenizes the normalized source. Throws JinjaError (with line/column filled in).
std::vector<Token> tokenize(const std::string& normalized);

} // namespace coli::jinja
