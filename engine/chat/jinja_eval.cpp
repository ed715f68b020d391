#include "chat/jinja_eval.h"

#include "chat/jinja_budget.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_parser.h"

#include <climits>
#include <cmath>
#include <unordered_map>

namespace coli::jinja {

namespace {

enum class Flow { Normal, Break, Continue };

[[noreturn]] void undefinedOperand(const Value& v, const std::string& op) {
    std::string hint = v.undefinedHint().empty() ? "value" : v.undefinedHint();
    fail(ErrorCode::InvalidArgument, hint + " is undefined (operand of '" + op + "')");
}

[[noreturn]] void badOperands(const std::string& op, const Value& a, const Value& b) {
    fail(ErrorCode::Malformed, "unsupported operand type(s) for " + op + ": '" + a.typeName() +
                                   "' and '" + b.typeName() + "'");
}

void checkOverflow(bool overflow) {
    if (overflow) fail(ErrorCode::Unsupported, "integer overflow (beyond 64 bits)");
}

// count * each, saturating (a product past the address space cannot fit any budget anyway).
size_t sizeProduct(size_t count, size_t each) {
    size_t r = 0;
    return __builtin_mul_overflow(count, each, &r) ? SIZE_MAX : r;
}

std::string repeat(const std::string& s, int64_t n) {
    if (n <= 0) return "";
    checkBytes(stringCost(sizeProduct(size_t(n), s.size())));
    chargeOps(uint64_t(n) / 1024); // also a repeated empty string takes n steps
    std::string out;
    out.reserve(s.size() * size_t(n));
    for (int64_t i = 0; i < n; ++i)
        out += s;
    return out;
}

Value binaryOp(const std::string& op, const Value& a, const Value& b) {
    if (op == "%" && a.isString())
        fail(ErrorCode::Unsupported, "printf-style string formatting ('...' % x)");
    if (a.isUndefined()) undefinedOperand(a, op);
    if (b.isUndefined()) undefinedOperand(b, op);
    bool nums = a.isNumber() && b.isNumber();
    bool ints = nums && !a.isFloat() && !b.isFloat();
    if (op == "+") {
        if (ints) {
            int64_t r = 0;
            checkOverflow(__builtin_add_overflow(a.asInt(), b.asInt(), &r));
            return Value(r);
        }
        if (nums) return Value(a.asDouble() + b.asDouble());
        if (a.isString() && b.isString()) {
            checkBytes(stringCost(a.asString().size() + b.asString().size()));
            return Value(a.asString() + b.asString());
        }
        if (a.isList() && b.isList()) {
            checkBytes((a.asList().size() + b.asList().size()) * sizeof(Value));
            chargeOps((a.asList().size() + b.asList().size()) / 1024);
            ValueList l = a.asList();
            l.insert(l.end(), b.asList().begin(), b.asList().end());
            return Value(l);
        }
        if (a.isString() || b.isString())
            fail(ErrorCode::Malformed, std::string("can only concatenate str (not \"") +
                                           (a.isString() ? b : a).typeName() + "\") to str");
        badOperands(op, a, b);
    }
    if (op == "-") {
        if (ints) {
            int64_t r = 0;
            checkOverflow(__builtin_sub_overflow(a.asInt(), b.asInt(), &r));
            return Value(r);
        }
        if (nums) return Value(a.asDouble() - b.asDouble());
        badOperands(op, a, b);
    }
    if (op == "*") {
        if (ints) {
            int64_t r = 0;
            checkOverflow(__builtin_mul_overflow(a.asInt(), b.asInt(), &r));
            return Value(r);
        }
        if (nums) return Value(a.asDouble() * b.asDouble());
        if (a.isString() && (b.isInt() || b.isBool()))
            return Value(repeat(a.asString(), b.asInt()));
        if (b.isString() && (a.isInt() || a.isBool()))
            return Value(repeat(b.asString(), a.asInt()));
        if ((a.isList() && (b.isInt() || b.isBool())) ||
            (b.isList() && (a.isInt() || a.isBool()))) {
            const Value& list = a.isList() ? a : b;
            int64_t times = a.isList() ? b.asInt() : a.asInt();
            if (list.isGenerator()) badOperands(op, a, b);
            if (times > 0) {
                checkBytes(
                    sizeProduct(sizeProduct(list.asList().size(), size_t(times)), sizeof(Value)));
                chargeOps(uint64_t(times) / 1024);
            }
            ValueList l;
            for (int64_t i = 0; i < times; ++i)
                l.insert(l.end(), list.asList().begin(), list.asList().end());
            return list.isTuple() ? Value::tuple(std::move(l)) : Value(std::move(l));
        }
        badOperands(op, a, b);
    }
    if (!nums) {
        if (op == "%" && a.isString())
            fail(ErrorCode::Unsupported, "printf-style string formatting ('...' % x)");
        badOperands(op, a, b);
    }
    if (op == "/") {
        if (b.asDouble() == 0.0) fail(ErrorCode::Malformed, "division by zero");
        return Value(a.asDouble() / b.asDouble());
    }
    if (op == "//" || op == "%") {
        if (b.asDouble() == 0.0) fail(ErrorCode::Malformed, "integer division or modulo by zero");
        if (ints) {
            int64_t x = a.asInt(), y = b.asInt();
            if (x == INT64_MIN && y == -1) fail(ErrorCode::Unsupported, "integer overflow");
            int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) { // Python floors toward negative infinity
                --q;
                r += y;
            }
            return op == "//" ? Value(q) : Value(r);
        }
        double x = a.asDouble(), y = b.asDouble();
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        if (m == 0) m = std::copysign(0.0, y); // CPython float_rem: zero takes the divisor's sign
        if (op == "%") return Value(m);
        return Value(std::floor(x / y));
    }
    if (op == "**") {
        if (ints && b.asInt() >= 0) {
            int64_t base = a.asInt(), e = b.asInt(), r = 1;
            while (e > 0) {
                if (e & 1) checkOverflow(__builtin_mul_overflow(r, base, &r));
                e >>= 1;
                if (e > 0) checkOverflow(__builtin_mul_overflow(base, base, &base));
            }
            return Value(r);
        }
        double x = a.asDouble(), y = b.asDouble();
        if (x == 0.0 && y < 0)
            fail(ErrorCode::Malformed, "0.0 cannot be raised to a negative power");
        if (x < 0 && y != std::floor(y))
            fail(ErrorCode::Unsupported, "fractional power of a negative number (complex result)");
        double r = std::pow(x, y);
        if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
            fail(ErrorCode::Malformed, "numerical result out of range (float overflow)");
        return Value(r);
    }
    badOperands(op, a, b);
}

bool compare(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "<") return lessThan(a, b);
    if (op == ">") return lessThan(b, a);
    if (op == "<=") return lessThan(a, b) || equals(a, b);
    if (op == ">=") return lessThan(b, a) || equals(a, b);
    if (op == "in") return contains(b, a);
    if (op == "notin") return !contains(b, a);
    fail(ErrorCode::Internal, "unknown comparison " + op);
}

class Evaluator {
public:
    Evaluator(const SourceMap& map, const Variables& vars) : m_map(map) {
        m_scopes.emplace_back();
        for (const auto& [k, v] : vars)
            m_scopes.back()[k] = v;
        m_scopes.emplace_back(); // the template's own top-level scope
    }

    std::string run(const Body& body) {
        exec(body);
        return std::move(m_out);
    }

private:
    using Scope = std::unordered_map<std::string, Value>;

    void attachPosition(JinjaError& err, size_t offset) const {
        if (err.line != 0) return;
        auto [line, col] = m_map.position(offset);
        err.line = line;
        err.column = col;
    }

    // Output counts against the memory budget like any value.
    void append(const std::string& s) {
        chargeBytes(s.size());
        m_out += s;
    }

    Value lookup(const std::string& name) const {
        for (auto it = m_scopes.rbegin(); it != m_scopes.rend(); ++it) {
            auto f = it->find(name);
            if (f != it->end()) return f->second;
        }
        if (name == "raise_exception") {
            static const Value fn(std::make_shared<const Callable>(
                Callable{"raise_exception", [](const CallArgs& a) -> Value {
                             JinjaError err{ErrorCode::InvalidArgument,
                                            a.args.empty() ? "" : toStr(a.args[0])};
                             err.raisedByTemplate = true;
                             throw err;
                         }}));
            return fn;
        }
        Value global = makeGlobalFunction(name);
        if (!global.isUndefined()) return global;
        return Value::undefined("'" + name + "'");
    }

    Flow exec(const Body& body) {
        for (const auto& s : body) {
            Flow f = execStmt(*s);
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    Flow execStmt(const Stmt& s) {
        try {
            chargeOps();
            return execStmtImpl(s);
        } catch (JinjaError& err) {
            attachPosition(err, s.offset);
            throw;
        }
    }

    void assign(const Stmt& s, const std::vector<std::string>& targets, const Value& v,
                Scope& scope) {
        if (targets.size() == 1) {
            scope[targets[0]] = v;
            return;
        }
        ValueList items = iterate(v);
        if (items.size() != targets.size())
            fail(ErrorCode::Malformed, "cannot unpack " + std::to_string(items.size()) +
                                           " values into " + std::to_string(targets.size()) +
                                           " names");
        for (size_t i = 0; i < targets.size(); ++i)
            scope[targets[i]] = items[i];
        (void)s;
    }

    Flow execStmtImpl(const Stmt& s) {
        switch (s.kind) {
        case StmtKind::Data:
            append(s.text);
            return Flow::Normal;
        case StmtKind::Emit:
            append(toStr(eval(*s.expr)));
            return Flow::Normal;
        case StmtKind::If:
            for (size_t i = 0; i < s.conditions.size(); ++i) {
                if (truthy(eval(*s.conditions[i]))) return exec(s.bodies[i]);
            }
            return exec(s.elseBody);
        case StmtKind::For:
            return execFor(s);
        case StmtKind::Set: {
            Value v = eval(*s.expr);
            if (!s.nsAttr.empty()) {
                Value ns = lookup(s.targets[0]);
                if (!ns.isDict() || !ns.asDict()->isNamespace)
                    fail(ErrorCode::Malformed, "cannot assign attribute '" + s.nsAttr + "' on '" +
                                                   s.targets[0] + "': not a namespace() object");
                ns.asDict()->set(s.nsAttr, v);
                return Flow::Normal;
            }
            assign(s, s.targets, v, m_scopes.back());
            return Flow::Normal;
        }
        case StmtKind::SetBlock: {
            std::string saved = std::move(m_out);
            m_out.clear();
            exec(s.body);
            std::string captured = std::move(m_out);
            m_out = std::move(saved);
            refundBytes(captured.size()); // no longer output: charged again as a string value
            m_scopes.back()[s.targets[0]] = Value(std::move(captured));
            return Flow::Normal;
        }
        case StmtKind::Scoped: {
            m_scopes.emplace_back();
            Flow f;
            try {
                f = exec(s.body);
            } catch (...) {
                m_scopes.pop_back();
                throw;
            }
            m_scopes.pop_back();
            return f;
        }
        case StmtKind::Break:
            return Flow::Break;
        case StmtKind::Continue:
            return Flow::Continue;
        }
        return Flow::Normal;
    }

    Flow execFor(const Stmt& s) {
        ValueList items = iterate(eval(*s.expr));
        if (s.filter) {
            ValueList kept;
            for (const Value& item : items) {
                m_scopes.emplace_back();
                assign(s, s.targets, item, m_scopes.back());
                bool keep = false;
                try {
                    keep = truthy(eval(*s.filter));
                } catch (...) {
                    m_scopes.pop_back();
                    throw;
                }
                m_scopes.pop_back();
                if (keep) kept.push_back(item);
            }
            items = std::move(kept);
        }
        if (items.empty()) return exec(s.elseBody);
        const int64_t n = int64_t(items.size());
        for (int64_t i = 0; i < n; ++i) {
            chargeOps();
            // The loop object belongs to the interpreter, not to the template's values: built
            // without charging the memory budget (a long loop is the operation budget's business).
            auto loop = std::make_shared<ValueDict>();
            auto put = [&](const char* key, Value v) {
                loop->items.emplace_back(key, std::move(v));
            };
            put("index", Value(i + 1));
            put("index0", Value(i));
            put("revindex", Value(n - i));
            put("revindex0", Value(n - i - 1));
            put("first", Value(i == 0));
            put("last", Value(i == n - 1));
            put("length", Value(n));
            put("depth", Value(1));
            put("depth0", Value(0));
            if (i > 0) put("previtem", items[size_t(i - 1)]);
            if (i + 1 < n) put("nextitem", items[size_t(i + 1)]);
            put("cycle", Value(std::make_shared<const Callable>(
                             Callable{"loop.cycle", [i](const CallArgs& a) {
                                          if (a.args.empty())
                                              fail(ErrorCode::Malformed,
                                                   "loop.cycle() needs at least one value");
                                          return a.args[size_t(i) % a.args.size()];
                                      }})));
            m_scopes.emplace_back();
            m_scopes.back()["loop"] = Value(loop);
            Flow f;
            try {
                assign(s, s.targets, items[size_t(i)], m_scopes.back());
                f = exec(s.body);
            } catch (...) {
                m_scopes.pop_back();
                throw;
            }
            m_scopes.pop_back();
            if (f == Flow::Break) break;
        }
        return Flow::Normal;
    }

    Value eval(const Expr& e) {
        try {
            chargeOps();
            return evalImpl(e);
        } catch (JinjaError& err) {
            attachPosition(err, e.offset);
            throw;
        }
    }

    CallArgs evalArgs(const Expr& e, size_t firstArg) {
        CallArgs a;
        size_t nKw = e.kwNames.size();
        size_t nPos = e.children.size() - firstArg - nKw;
        for (size_t i = 0; i < nPos; ++i)
            a.args.push_back(weighed(eval(*e.children[firstArg + i])));
        for (size_t i = 0; i < nKw; ++i)
            a.kwargs.emplace_back(e.kwNames[i], weighed(eval(*e.children[firstArg + nPos + i])));
        return a;
    }

    // Built-ins scan the text they are given (search, compare, decode...): an operand's text
    // costs operations by its length, so a loop over a large string cannot run for hours within
    // the operation budget.
    static Value weighed(Value v) {
        if (v.isString()) chargeText(v.asString().size());
        return v;
    }

    Value evalImpl(const Expr& e) {
        switch (e.kind) {
        case ExprKind::Literal:
            return e.literal;
        case ExprKind::Name:
            return lookup(e.name);
        case ExprKind::List: {
            ValueList items;
            for (const auto& c : e.children)
                items.push_back(eval(*c));
            return e.name == "tuple" ? Value::tuple(std::move(items)) : Value(std::move(items));
        }
        case ExprKind::Dict: {
            auto d = std::make_shared<ValueDict>();
            for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
                Value k = eval(*e.children[i]);
                if (!k.isString())
                    fail(ErrorCode::Unsupported,
                         std::string("dict literal with a non-string key (") + k.typeName() + ")");
                d->set(k.asString(), eval(*e.children[i + 1]));
            }
            return Value(d);
        }
        case ExprKind::GetAttr:
            return getAttribute(weighed(eval(*e.children[0])), e.name);
        case ExprKind::GetItem: { // operands in Python's order: object, then index
            Value obj = weighed(eval(*e.children[0]));
            Value index = weighed(eval(*e.children[1]));
            return getItem(obj, index);
        }
        case ExprKind::Slice: {
            Value obj = weighed(eval(*e.children[0]));
            Value parts[3];
            const Value* ptr[3] = {nullptr, nullptr, nullptr};
            for (int i = 0; i < 3; ++i) {
                if (e.children[size_t(i) + 1]) {
                    parts[i] = eval(*e.children[size_t(i) + 1]);
                    ptr[i] = &parts[i];
                }
            }
            return getSlice(obj, ptr[0], ptr[1], ptr[2]);
        }
        case ExprKind::Call: {
            Value callee = eval(*e.children[0]);
            CallArgs a = evalArgs(e, 1);
            if (callee.isCallable()) return callee.asCallable().fn(a);
            if (callee.isUndefined()) {
                if (e.children[0]->kind == ExprKind::Name)
                    fail(ErrorCode::Unsupported,
                         "call of unknown function '" + e.children[0]->name + "'");
                fail(ErrorCode::InvalidArgument,
                     callee.undefinedHint() + " (called as a function)");
            }
            fail(ErrorCode::Malformed,
                 std::string("'") + callee.typeName() + "' object is not callable");
        }
        case ExprKind::Filter: {
            Value input = weighed(eval(*e.children[0]));
            return applyFilter(e.name, input, evalArgs(e, 1));
        }
        case ExprKind::Test: {
            Value input = weighed(eval(*e.children[0]));
            std::vector<Value> args;
            for (size_t i = 1; i < e.children.size(); ++i)
                args.push_back(weighed(eval(*e.children[i])));
            return Value(applyTest(e.name, input, args) != e.negated);
        }
        case ExprKind::Unary: {
            Value v = eval(*e.children[0]);
            if (e.name == "not") return Value(!truthy(v));
            if (v.isUndefined()) undefinedOperand(v, "unary " + e.name);
            if (!v.isNumber())
                fail(ErrorCode::Malformed,
                     "bad operand type for unary " + e.name + ": '" + v.typeName() + "'");
            if (v.isFloat()) return Value(e.name == "-" ? -v.asDouble() : v.asDouble());
            if (e.name == "-") {
                if (v.asInt() == INT64_MIN) fail(ErrorCode::Unsupported, "integer overflow");
                return Value(-v.asInt());
            }
            return Value(v.asInt());
        }
        case ExprKind::Binary: {
            Value left = weighed(eval(*e.children[0])); // left first, as Python
            Value right = weighed(eval(*e.children[1]));
            return binaryOp(e.name, left, right);
        }
        case ExprKind::Compare: {
            Value left = weighed(eval(*e.children[0]));
            for (size_t i = 0; i < e.ops.size(); ++i) {
                Value right = weighed(eval(*e.children[i + 1]));
                if (!compare(e.ops[i], left, right)) return Value(false);
                left = std::move(right);
            }
            return Value(true);
        }
        case ExprKind::And: {
            Value l = eval(*e.children[0]);
            return truthy(l) ? eval(*e.children[1]) : l;
        }
        case ExprKind::Or: {
            Value l = eval(*e.children[0]);
            return truthy(l) ? l : eval(*e.children[1]);
        }
        case ExprKind::CondExpr:
            if (truthy(eval(*e.children[1]))) return eval(*e.children[0]);
            if (e.children[2]) return eval(*e.children[2]);
            return Value::undefined("the else branch of a conditional expression");
        case ExprKind::Concat: {
            std::string s;
            for (const auto& c : e.children) {
                Value v = weighed(eval(*c));
                if (v.isString()) checkBytes(stringCost(s.size() + v.asString().size()));
                s += toStr(v);
                checkBytes(stringCost(s.size()));
            }
            return Value(std::move(s));
        }
        }
        fail(ErrorCode::Internal, "unknown expression kind");
    }

    const SourceMap& m_map;
    std::vector<Scope> m_scopes;
    std::string m_out;
};

} // namespace

std::unique_ptr<Template> Template::parse(const std::string& source) {
    std::unique_ptr<Template> t(new Template());
    t->m_source = normalizeNewlines(source);
    t->m_map = std::make_unique<SourceMap>(t->m_source);
    std::vector<Token> tokens = tokenize(t->m_source);
    t->m_body = parseTemplate(tokens, *t->m_map);
    return t;
}

std::string Template::render(const Variables& variables, const RenderLimits& limits,
                             const std::atomic<bool>* cancel, RenderUsage* usage) const {
    BudgetScope budget(limits, cancel, usage);
    Evaluator ev(*m_map, variables);
    return ev.run(m_body);
}

} // namespace coli::jinja
