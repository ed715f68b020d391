#include "chat/jinja_parser.h"

#include "chat/jinja_builtins.h"

#include <initializer_list>

namespace coli::jinja {

namespace {

// Deeper nesting than this is refused rather than risking the stack on hostile input.
constexpr int kMaxDepth = 200;

class Parser {
public:
    Parser(const std::vector<Token>& tokens, const SourceMap& map) : m_toks(tokens), m_map(map) {}

    Body parseAll() {
        std::string end;
        Body body = parseBody({}, end);
        return body;
    }

private:
    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser) : p(parser) {
            if (++p.m_depth > kMaxDepth)
                p.error(ErrorCode::Malformed, "template nested too deeply");
        }
        ~DepthGuard() { --p.m_depth; }
    };

    const Token& cur() const { return m_toks[m_pos]; }
    const Token& peek(size_t n = 1) const {
        size_t i = m_pos + n;
        return i < m_toks.size() ? m_toks[i] : m_toks.back();
    }
    void advance() {
        if (m_pos + 1 < m_toks.size()) ++m_pos;
    }
    bool isOp(const char* op) const { return cur().kind == TokKind::Op && cur().text == op; }
    bool isName(const char* n) const { return cur().kind == TokKind::Name && cur().text == n; }
    bool skipOp(const char* op) {
        if (!isOp(op)) return false;
        advance();
        return true;
    }
    bool skipName(const char* n) {
        if (!isName(n)) return false;
        advance();
        return true;
    }

    [[noreturn]] void error(ErrorCode code, const std::string& msg) const {
        errorAt(code, cur().offset, msg);
    }
    [[noreturn]] void errorAt(ErrorCode code, size_t offset, const std::string& msg) const {
        auto [line, col] = m_map.position(offset);
        throw JinjaError{code, msg, line, col};
    }

    static std::string describe(const Token& t) {
        switch (t.kind) {
        case TokKind::Data:
            return "template text";
        case TokKind::VarBegin:
            return "'{{'";
        case TokKind::VarEnd:
            return "'}}'";
        case TokKind::BlockBegin:
            return "'{%'";
        case TokKind::BlockEnd:
            return "'%}'";
        case TokKind::Name:
            return "'" + t.text + "'";
        case TokKind::String:
            return "string literal";
        case TokKind::Int:
        case TokKind::Float:
            return "number " + t.text;
        case TokKind::Op:
            return "'" + t.text + "'";
        case TokKind::Eof:
            return "end of template";
        }
        return "token";
    }

    void expectOp(const char* op) {
        if (!skipOp(op))
            error(ErrorCode::Malformed,
                  std::string("expected '") + op + "', got " + describe(cur()));
    }
    void expectBlockEnd() {
        if (cur().kind != TokKind::BlockEnd)
            error(ErrorCode::Malformed, "expected end of statement '%}', got " + describe(cur()));
        advance();
    }
    std::string expectName(const char* what) {
        if (cur().kind != TokKind::Name)
            error(ErrorCode::Malformed,
                  std::string("expected ") + what + ", got " + describe(cur()));
        std::string n = cur().text;
        advance();
        return n;
    }

    ExprPtr node(ExprKind kind, size_t offset) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->offset = offset;
        return e;
    }

    // ---- statements ----

    // Parses statements until a block tag whose name is in `ends` (consumed; its name is stored
    // in `endName`, the rest of that tag is left for the caller), or the end of the template.
    Body parseBody(std::initializer_list<const char*> ends, std::string& endName) {
        DepthGuard guard(*this);
        Body body;
        while (true) {
            const Token& t = cur();
            if (t.kind == TokKind::Eof) {
                if (ends.size() == 0) return body;
                std::string list;
                for (const char* e : ends)
                    list += std::string(list.empty() ? "" : " or ") + e;
                error(ErrorCode::Malformed,
                      "unexpected end of template, expected '{% " + list + " %}'");
            }
            if (t.kind == TokKind::Data) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Data;
                s->offset = t.offset;
                s->text = t.text;
                body.push_back(std::move(s));
                advance();
            } else if (t.kind == TokKind::VarBegin) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Emit;
                s->offset = t.offset;
                advance();
                s->expr = parseTuple(true);
                if (cur().kind != TokKind::VarEnd)
                    error(ErrorCode::Malformed, "expected '}}', got " + describe(cur()));
                advance();
                body.push_back(std::move(s));
            } else if (t.kind == TokKind::BlockBegin) {
                size_t tagOffset = t.offset;
                advance();
                if (cur().kind != TokKind::Name)
                    error(ErrorCode::Malformed,
                          "expected a tag name after '{%', got " + describe(cur()));
                std::string name = cur().text;
                for (const char* e : ends) {
                    if (name == e) {
                        advance();
                        endName = name;
                        return body;
                    }
                }
                body.push_back(parseStatement(name, tagOffset));
            } else {
                error(ErrorCode::Malformed, "unexpected " + describe(t));
            }
        }
    }

    std::unique_ptr<Stmt> parseStatement(const std::string& name, size_t offset) {
        auto s = std::make_unique<Stmt>();
        s->offset = offset;
        if (name == "if") {
            advance();
            s->kind = StmtKind::If;
            s->conditions.push_back(parseTuple(false));
            expectBlockEnd();
            while (true) {
                std::string end;
                s->bodies.push_back(parseBody({"elif", "else", "endif"}, end));
                if (end == "elif") {
                    s->conditions.push_back(parseTuple(false));
                    expectBlockEnd();
                    continue;
                }
                if (end == "else") {
                    expectBlockEnd();
                    s->elseBody = parseBody({"endif"}, end);
                }
                expectBlockEnd();
                break;
            }
            return s;
        }
        if (name == "for") {
            advance();
            s->kind = StmtKind::For;
            s->targets = parseTargets();
            if (!skipName("in"))
                error(ErrorCode::Malformed, "expected 'in', got " + describe(cur()));
            s->expr = parseTuple(false);
            if (skipName("if")) s->filter = parseExpression();
            if (isName("recursive")) error(ErrorCode::Unsupported, "recursive for loops");
            expectBlockEnd();
            ++m_loopDepth;
            std::string end;
            s->body = parseBody({"endfor", "else"}, end);
            --m_loopDepth;
            if (end == "else") {
                expectBlockEnd();
                s->elseBody = parseBody({"endfor"}, end);
            }
            expectBlockEnd();
            return s;
        }
        if (name == "set") {
            advance();
            std::string first = expectName("a variable name after 'set'");
            if (skipOp(".")) {
                s->targets.push_back(first);
                s->nsAttr = expectName("an attribute name");
            } else {
                s->targets.push_back(first);
                while (skipOp(","))
                    s->targets.push_back(expectName("a variable name"));
            }
            if (skipOp("=")) {
                s->kind = StmtKind::Set;
                s->expr = parseTuple(true);
                expectBlockEnd();
                return s;
            }
            if (isOp("|")) error(ErrorCode::Unsupported, "filtered block set ({% set x | f %})");
            if (!s->nsAttr.empty() || s->targets.size() != 1)
                error(ErrorCode::Malformed, "expected '=' in set");
            expectBlockEnd();
            s->kind = StmtKind::SetBlock;
            std::string end;
            s->body = parseBody({"endset"}, end);
            expectBlockEnd();
            return s;
        }
        if (name == "break" || name == "continue") {
            if (m_loopDepth == 0)
                error(ErrorCode::Malformed, "'" + name + "' outside of a for loop");
            advance();
            s->kind = name == "break" ? StmtKind::Break : StmtKind::Continue;
            expectBlockEnd();
            return s;
        }
        if (name == "generation") {
            advance();
            expectBlockEnd();
            s->kind = StmtKind::Scoped;
            std::string end;
            s->body = parseBody({"endgeneration"}, end);
            expectBlockEnd();
            return s;
        }
        static const char* unsupported[] = {"macro", "call",    "filter",   "include", "import",
                                            "from",  "extends", "block",    "with",    "autoescape",
                                            "do",    "trans",   "pluralize"};
        for (const char* u : unsupported) {
            if (name == u) error(ErrorCode::Unsupported, "{% " + name + " %} statements");
        }
        error(ErrorCode::Malformed, "unexpected tag '" + name + "'");
    }

    std::vector<std::string> parseTargets() {
        std::vector<std::string> names;
        bool paren = skipOp("(");
        names.push_back(expectName("a loop variable name"));
        while (skipOp(",")) {
            if (cur().kind != TokKind::Name) break;
            names.push_back(expectName("a loop variable name"));
        }
        if (paren) expectOp(")");
        return names;
    }

    // ---- expressions ----

    bool startsExpression() const {
        const Token& t = cur();
        if (t.kind == TokKind::Name)
            return t.text != "in" && t.text != "if" && t.text != "else" && t.text != "and" &&
                   t.text != "or" && t.text != "is" && t.text != "recursive";
        if (t.kind == TokKind::String || t.kind == TokKind::Int || t.kind == TokKind::Float)
            return true;
        if (t.kind == TokKind::Op)
            return t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" ||
                   t.text == "+";
        return false;
    }

    ExprPtr parseTuple(bool withCondExpr) {
        size_t offset = cur().offset;
        ExprPtr first = withCondExpr ? parseExpression() : parseOr();
        if (!isOp(",")) return first;
        auto tuple = node(ExprKind::List, offset);
        tuple->name = "tuple";
        tuple->children.push_back(std::move(first));
        while (skipOp(",")) {
            if (!startsExpression()) break;
            tuple->children.push_back(withCondExpr ? parseExpression() : parseOr());
        }
        return tuple;
    }

    ExprPtr parseExpression() {
        DepthGuard guard(*this);
        size_t offset = cur().offset;
        ExprPtr expr = parseOr();
        while (skipName("if")) {
            auto c = node(ExprKind::CondExpr, offset);
            ExprPtr cond = parseOr();
            ExprPtr otherwise = skipName("else") ? parseExpression() : nullptr;
            c->children.push_back(std::move(expr));
            c->children.push_back(std::move(cond));
            c->children.push_back(std::move(otherwise));
            expr = std::move(c);
        }
        return expr;
    }

    ExprPtr parseOr() {
        ExprPtr left = parseAnd();
        while (isName("or")) {
            size_t offset = cur().offset;
            advance();
            auto n = node(ExprKind::Or, offset);
            n->children.push_back(std::move(left));
            n->children.push_back(parseAnd());
            left = std::move(n);
        }
        return left;
    }

    ExprPtr parseAnd() {
        ExprPtr left = parseNot();
        while (isName("and")) {
            size_t offset = cur().offset;
            advance();
            auto n = node(ExprKind::And, offset);
            n->children.push_back(std::move(left));
            n->children.push_back(parseNot());
            left = std::move(n);
        }
        return left;
    }

    ExprPtr parseNot() {
        if (isName("not")) {
            DepthGuard guard(*this);
            auto n = node(ExprKind::Unary, cur().offset);
            advance();
            n->name = "not";
            n->children.push_back(parseNot());
            return n;
        }
        return parseCompare();
    }

    ExprPtr parseCompare() {
        size_t offset = cur().offset;
        ExprPtr first = parseMath1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            if (cur().kind == TokKind::Op &&
                (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                 cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
                op = cur().text;
                advance();
            } else if (isName("in")) {
                op = "in";
                advance();
            } else if (isName("not") && peek().kind == TokKind::Name && peek().text == "in") {
                op = "notin";
                advance();
                advance();
            } else {
                break;
            }
            if (!cmp) {
                cmp = node(ExprKind::Compare, offset);
                cmp->children.push_back(std::move(first));
            }
            cmp->ops.push_back(op);
            cmp->children.push_back(parseMath1());
        }
        return cmp ? std::move(cmp) : std::move(first);
    }

    ExprPtr binary(const std::string& op, size_t offset, ExprPtr l, ExprPtr r) {
        auto n = node(ExprKind::Binary, offset);
        n->name = op;
        n->children.push_back(std::move(l));
        n->children.push_back(std::move(r));
        return n;
    }

    ExprPtr parseMath1() {
        ExprPtr left = parseConcat();
        while (isOp("+") || isOp("-")) {
            std::string op = cur().text;
            size_t offset = cur().offset;
            advance();
            left = binary(op, offset, std::move(left), parseConcat());
        }
        return left;
    }

    ExprPtr parseConcat() {
        size_t offset = cur().offset;
        ExprPtr first = parseMath2();
        if (!isOp("~")) return first;
        auto n = node(ExprKind::Concat, offset);
        n->children.push_back(std::move(first));
        while (skipOp("~"))
            n->children.push_back(parseMath2());
        return n;
    }

    ExprPtr parseMath2() {
        ExprPtr left = parsePow();
        while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
            std::string op = cur().text;
            size_t offset = cur().offset;
            advance();
            left = binary(op, offset, std::move(left), parsePow());
        }
        return left;
    }

    ExprPtr parsePow() {
        ExprPtr left = parseUnary(true);
        while (isOp("**")) {
            size_t offset = cur().offset;
            advance();
            left = binary("**", offset, std::move(left), parseUnary(true));
        }
        return left;
    }

    ExprPtr parseUnary(bool withFilter) {
        DepthGuard guard(*this);
        ExprPtr e;
        if (isOp("-") || isOp("+")) {
            e = node(ExprKind::Unary, cur().offset);
            e->name = cur().text;
            advance();
            e->children.push_back(parseUnary(false));
        } else {
            e = parsePostfix(parsePrimary());
        }
        if (withFilter) e = parseFilterExpr(std::move(e));
        return e;
    }

    ExprPtr parsePrimary() {
        const Token& t = cur();
        size_t offset = t.offset;
        if (t.kind == TokKind::Name) {
            std::string n = t.text;
            if (n == "true" || n == "True" || n == "false" || n == "False") {
                advance();
                auto e = node(ExprKind::Literal, offset);
                e->literal = Value(n == "true" || n == "True");
                return e;
            }
            if (n == "none" || n == "None") {
                advance();
                auto e = node(ExprKind::Literal, offset);
                e->literal = Value::none();
                return e;
            }
            if (n == "and" || n == "or" || n == "not" || n == "in" || n == "is" || n == "if" ||
                n == "else")
                error(ErrorCode::Malformed, "unexpected '" + n + "'");
            advance();
            auto e = node(ExprKind::Name, offset);
            e->name = n;
            return e;
        }
        if (t.kind == TokKind::String) {
            std::string s;
            while (cur().kind == TokKind::String) { // adjacent literals concatenate
                s += cur().text;
                advance();
            }
            auto e = node(ExprKind::Literal, offset);
            e->literal = Value(std::move(s));
            return e;
        }
        if (t.kind == TokKind::Int || t.kind == TokKind::Float) {
            auto e = node(ExprKind::Literal, offset);
            e->literal = t.kind == TokKind::Int ? Value(t.intValue) : Value(t.floatValue);
            advance();
            return e;
        }
        if (isOp("(")) {
            advance();
            if (skipOp(")")) { // empty tuple
                auto empty = node(ExprKind::List, offset);
                empty->name = "tuple";
                return empty;
            }
            ExprPtr first = parseExpression();
            if (skipOp(")")) return first;
            auto tuple = node(ExprKind::List, offset);
            tuple->name = "tuple";
            tuple->children.push_back(std::move(first));
            while (skipOp(",")) {
                if (isOp(")")) break;
                tuple->children.push_back(parseExpression());
            }
            expectOp(")");
            return tuple;
        }
        if (isOp("[")) {
            advance();
            auto list = node(ExprKind::List, offset);
            while (!isOp("]")) {
                list->children.push_back(parseExpression());
                if (!skipOp(",")) break;
            }
            expectOp("]");
            return list;
        }
        if (isOp("{")) {
            advance();
            auto dict = node(ExprKind::Dict, offset);
            while (!isOp("}")) {
                dict->children.push_back(parseExpression());
                expectOp(":");
                dict->children.push_back(parseExpression());
                if (!skipOp(",")) break;
            }
            expectOp("}");
            return dict;
        }
        error(ErrorCode::Malformed, "unexpected " + describe(t) + " in an expression");
    }

    ExprPtr parsePostfix(ExprPtr e) {
        while (true) {
            size_t offset = cur().offset;
            if (skipOp(".")) {
                if (cur().kind == TokKind::Int) {
                    auto idx = node(ExprKind::Literal, cur().offset);
                    idx->literal = Value(cur().intValue);
                    advance();
                    auto n = node(ExprKind::GetItem, offset);
                    n->children.push_back(std::move(e));
                    n->children.push_back(std::move(idx));
                    e = std::move(n);
                    continue;
                }
                auto n = node(ExprKind::GetAttr, offset);
                n->name = expectName("an attribute name after '.'");
                n->children.push_back(std::move(e));
                e = std::move(n);
            } else if (isOp("[")) {
                advance();
                e = parseSubscript(std::move(e), offset);
            } else if (isOp("(")) {
                e = parseCall(std::move(e), ExprKind::Call, "", offset);
            } else {
                return e;
            }
        }
    }

    ExprPtr parseSubscript(ExprPtr object, size_t offset) {
        ExprPtr start, stop, step;
        if (!isOp(":")) start = parseExpression();
        if (skipOp(":")) {
            if (!isOp("]") && !isOp(":")) stop = parseExpression();
            if (skipOp(":") && !isOp("]")) step = parseExpression();
            expectOp("]");
            auto n = node(ExprKind::Slice, offset);
            n->children.push_back(std::move(object));
            n->children.push_back(std::move(start));
            n->children.push_back(std::move(stop));
            n->children.push_back(std::move(step));
            return n;
        }
        if (isOp(",")) error(ErrorCode::Unsupported, "tuple subscripts (x[a, b])");
        expectOp("]");
        auto n = node(ExprKind::GetItem, offset);
        n->children.push_back(std::move(object));
        n->children.push_back(std::move(start));
        return n;
    }

    // Parses "(args)" for a call, filter or test; `e` becomes children[0].
    ExprPtr parseCall(ExprPtr e, ExprKind kind, const std::string& name, size_t offset) {
        auto n = node(kind, offset);
        n->name = name;
        n->children.push_back(std::move(e));
        expectOp("(");
        std::vector<ExprPtr> kwValues;
        while (!isOp(")")) {
            if (isOp("*") || isOp("**")) error(ErrorCode::Unsupported, "*args/**kwargs in a call");
            if (cur().kind == TokKind::Name && peek().kind == TokKind::Op && peek().text == "=") {
                n->kwNames.push_back(cur().text);
                advance();
                advance();
                kwValues.push_back(parseExpression());
            } else {
                if (!kwValues.empty())
                    error(ErrorCode::Malformed, "positional argument follows keyword argument");
                n->children.push_back(parseExpression());
            }
            if (!skipOp(",")) break;
        }
        expectOp(")");
        for (auto& v : kwValues)
            n->children.push_back(std::move(v));
        return n;
    }

    ExprPtr parseFilterExpr(ExprPtr e) {
        while (true) {
            size_t offset = cur().offset;
            if (isOp("|")) {
                advance();
                size_t nameOffset = cur().offset;
                std::string name = expectName("a filter name after '|'");
                if (!isKnownFilter(name))
                    errorAt(ErrorCode::Unsupported, nameOffset, "filter '" + name + "'");
                if (isOp("(")) {
                    e = parseCall(std::move(e), ExprKind::Filter, name, offset);
                } else {
                    auto n = node(ExprKind::Filter, offset);
                    n->name = name;
                    n->children.push_back(std::move(e));
                    e = std::move(n);
                }
            } else if (isName("is")) {
                advance();
                bool negated = skipName("not");
                size_t nameOffset = cur().offset;
                std::string name;
                if (cur().kind == TokKind::Name) {
                    name = expectName("a test name");
                } else if (cur().kind == TokKind::Op &&
                           (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                            cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
                    name = cur().text;
                    advance();
                } else {
                    error(ErrorCode::Malformed, "expected a test name after 'is'");
                }
                if (!isKnownTest(name))
                    errorAt(ErrorCode::Unsupported, nameOffset, "test '" + name + "'");
                ExprPtr t;
                if (isOp("(")) {
                    t = parseCall(std::move(e), ExprKind::Test, name, offset);
                    if (!t->kwNames.empty())
                        error(ErrorCode::Unsupported, "keyword arguments to a test");
                } else {
                    t = node(ExprKind::Test, offset);
                    t->name = name;
                    t->children.push_back(std::move(e));
                    const Token& c = cur();
                    bool argStarts = (c.kind == TokKind::Name && c.text != "else" &&
                                      c.text != "or" && c.text != "and") ||
                                     c.kind == TokKind::String || c.kind == TokKind::Int ||
                                     c.kind == TokKind::Float ||
                                     (c.kind == TokKind::Op && (c.text == "[" || c.text == "{"));
                    if (argStarts) {
                        if (isName("is"))
                            error(ErrorCode::Malformed, "cannot chain tests with 'is'");
                        t->children.push_back(parsePostfix(parsePrimary()));
                    }
                }
                t->negated = negated;
                e = std::move(t);
            } else if (isOp("(")) {
                e = parseCall(std::move(e), ExprKind::Call, "", offset);
            } else {
                return e;
            }
        }
    }

    const std::vector<Token>& m_toks;
    const SourceMap& m_map;
    size_t m_pos = 0;
    int m_depth = 0;
    int m_loopDepth = 0;
};

} // namespace

Body parseTemplate(const std::vector<Token>& tokens, const SourceMap& map) {
    return Parser(tokens, map).parseAll();
}

} // namespace coli::jinja
