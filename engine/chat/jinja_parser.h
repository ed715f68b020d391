#pragma once
// Recursive-descent parser for the Jinja2 subset chat templates use, following the grammar and
// operator precedence of jinja2/parser.py (condexpr < or < and < not < comparisons < + - < ~ <
// * / // % < ** < unary - + < postfix . [] () < filters | and tests "is").
// Statements: if/elif/else, for (tuple targets, "if" filter, else, break/continue), set (name,
// tuple, namespace attribute, block set), transformers' {% generation %}. Not supported
// (Unsupported, naming the tag): macro, call, filter blocks, include/import/extends/block, with,
// autoescape, do, recursive loops, *args/**kwargs in calls. Filters and tests are checked against
// the interpreter's built-in lists at parse time, as jinja2 does at compile time: an unknown one is
// Unsupported. Errors: JinjaError with line:column (Malformed for syntax, Unsupported for
// constructs outside the subset). Thread-safety: pure function.
#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace coli::jinja {

// Parses a token stream from tokenize(); `map` gives line:column for messages.
Body parseTemplate(const std::vector<Token>& tokens, const SourceMap& map);

} // namespace coli::jinja
