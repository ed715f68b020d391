#pragma once
// The values a chat template computes with: a small variant mirroring the Python objects jinja2
// sees when transformers renders a template (None, bool, int, float, str, list, dict, callables,
// jinja's Undefined and namespace()). Semantics follow Python 3 (truthiness, ==, <, str(), repr(),
// json.dumps) because byte-identical output with python3-jinja2 is the contract.
// Lists and dicts are shared by reference like Python objects; the interpreter never mutates a
// list or dict after building it (transformers uses jinja2's ImmutableSandboxedEnvironment), the
// only mutable object is a namespace().
// Strings are UTF-8; wherever Python counts characters (len, indexing, slicing) we count code
// points.
// Thread-safety: a Value is safe to read from several threads; namespaces are only mutated by the
// single render call that created them.
#include "core/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace coli::jinja {

// Errors inside the interpreter travel as this exception (evaluation is deeply recursive); it is
// caught and turned into a Status at the ChatTemplate boundary, never thrown across the engine API.
struct JinjaError {
    ErrorCode code;
    std::string message;
    int line = 0;                  // 1-based; 0 when unknown
    int column = 0;                // 1-based, in code points; 0 when unknown
    bool raisedByTemplate = false; // raise_exception(): message is the template's own text
};
[[noreturn]] void fail(ErrorCode code, std::string message);

class Value;
using ValueList = std::vector<Value>;
struct ListBox; // a list, tuple or generator (see ListBox)

// Insertion-ordered string-keyed dict (Python dicts keep insertion order).
struct ValueDict {
    std::vector<std::pair<std::string, Value>> items;
    bool isNamespace = false; // created by namespace(): attribute assignment allowed
    int depth = 1;            // nesting (see kMaxNesting)
    size_t charged = 0;       // bytes charged to the render's budget, given back on destruction
    const Value* find(const std::string& key) const;
    // Adds or replaces; a new entry charges the render's budget. Fails (InvalidArgument) when v
    // would nest the dict deeper than kMaxNesting.
    void set(const std::string& key, Value v);

    ValueDict() = default;
    ValueDict(ValueDict&& other) noexcept;
    ValueDict(const ValueDict&) = delete;
    ValueDict& operator=(const ValueDict&) = delete;
    ~ValueDict();
};

// A string value's text; what it charged to the render's budget is given back when it dies.
struct Text {
    std::string text;
    size_t charged = 0;
    ~Text();
};

// Lists and dicts nest at most this deep. The functions walking values (repr, tojson, ==, the
// destructors) recurse, so a template nesting a list in itself 100000 times would otherwise
// overflow the stack; Python refuses such values too (RecursionError at about 1000 levels).
constexpr int kMaxNesting = 200;

struct CallArgs;
struct Callable {
    std::string name; // for messages: "raise_exception", "str.startswith", ...
    std::function<Value(const CallArgs&)> fn;
};

struct Undefined {
    std::string hint; // what was looked up, e.g. "'x'" or "'str object' has no attribute 'foo'"
};
struct None {};

class Value {
public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

    Value() : m_v(Undefined{}) {}
    static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }
    static Value none() { return Value(None{}); }
    Value(bool b) : m_v(b) {}
    Value(int64_t i) : m_v(i) {}
    Value(int i) : m_v(int64_t(i)) {}
    Value(double d) : m_v(d) {}
    // Strings, lists and dicts charge the render's budget (chat/jinja_budget.h) when built.
    Value(std::string s);
    Value(const char* s) : Value(std::string(s)) {}
    Value(ValueList l);
    static Value tuple(ValueList l);
    // The lazy result of select/reject/selectattr/rejectattr/map: iterable (and always truthy,
    // like a Python generator) but refused by len(), printing and subscripts, as in jinja2.
    static Value generator(ValueList l);
    // d.items()/keys()/values(): a list that prints as Python's view, e.g. dict_keys(['a']).
    static Value dictView(const char* view, ValueList l);
    Value(std::shared_ptr<ValueDict> d) : m_v(std::move(d)) {}
    Value(std::shared_ptr<const Callable> c) : m_v(std::move(c)) {}
    static Value dict(ValueDict d) { return Value(std::make_shared<ValueDict>(std::move(d))); }
    explicit Value(Undefined u) : m_v(std::move(u)) {}
    explicit Value(None n) : m_v(n) {}

    Kind kind() const { return Kind(m_v.index()); }
    bool isUndefined() const { return kind() == Kind::Undefined; }
    bool isNone() const { return kind() == Kind::None; }
    bool isBool() const { return kind() == Kind::Bool; }
    bool isInt() const { return kind() == Kind::Int; }
    bool isFloat() const { return kind() == Kind::Float; }
    bool isNumber() const { return isBool() || isInt() || isFloat(); } // Python: bool is an int
    bool isString() const { return kind() == Kind::String; }
    bool isList() const { return kind() == Kind::List; }
    bool isDict() const { return kind() == Kind::Dict; }
    bool isCallable() const { return kind() == Kind::Callable; }

    bool asBool() const { return std::get<bool>(m_v); }
    int64_t asInt() const;   // bool or int
    double asDouble() const; // bool, int or float
    const std::string& asString() const { return std::get<std::shared_ptr<const Text>>(m_v)->text; }
    const ValueList& asList() const;
    bool isTuple() const;
    bool isGenerator() const;
    // Generators: hands out the items once and marks the generator exhausted.
    ValueList consumeGenerator() const;
    const std::shared_ptr<ValueDict>& asDict() const {
        return std::get<std::shared_ptr<ValueDict>>(m_v);
    }
    const Callable& asCallable() const { return *std::get<std::shared_ptr<const Callable>>(m_v); }
    const std::string& undefinedHint() const { return std::get<Undefined>(m_v).hint; }

    // Lists: "" or the dict view name ("dict_items", ...) that repr() shows.
    const std::string& listView() const;
    // Nesting: 0 for scalars, 1 for a list or dict of scalars, ...
    int depth() const;

    // Python's type name, for messages: "str", "int", "list", "dict", "NoneType", "Undefined".
    const char* typeName() const;

private:
    // Strings are shared like lists (immutable): copying a Value never copies text, so the cost
    // of a render is the values it builds, which the budget counts.
    std::variant<Undefined, None, bool, int64_t, double, std::shared_ptr<const Text>,
                 std::shared_ptr<const ListBox>, std::shared_ptr<ValueDict>,
                 std::shared_ptr<const Callable>>
        m_v;
};

struct ListBox {
    ListBox() = default;
    ListBox(const ListBox&) = delete;
    ListBox& operator=(const ListBox&) = delete;
    ~ListBox(); // gives back what the list charged to the render's budget
    enum class Flavor { List, Tuple, Generator };
    ValueList items;
    Flavor flavor = Flavor::List;
    std::string view; // "dict_items"/"dict_keys"/"dict_values": repr() is view([...])
    // A generator can be iterated once (later iterations see nothing), as in Python. Only the
    // render call that created it touches it.
    mutable bool consumed = false;
    int depth = 1;      // nesting (see kMaxNesting)
    size_t charged = 0; // bytes charged to the render's budget
};

struct CallArgs {
    std::vector<Value> args;
    std::vector<std::pair<std::string, Value>> kwargs;
    // The kwarg named `name`, else the positional argument at `index`, else nullopt.
    std::optional<Value> get(size_t index, const std::string& name) const;
};

// Python semantics.
bool truthy(const Value& v);
std::string toStr(const Value& v);  // str(v); Undefined -> ""
std::string toRepr(const Value& v); // repr(v)
bool equals(const Value& a, const Value& b);
// a < b for numbers and strings (code point order); other types fail (Malformed).
bool lessThan(const Value& a, const Value& b);
std::string floatRepr(double d); // Python float.__repr__, e.g. "1.0", "1e+20", "0.1"

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers' tojson filter calls
// it. indent: nullopt for compact, else the indent string (an int n becomes n spaces).
struct JsonOptions {
    bool ensureAscii = false;
    std::optional<std::string> indent;
    std::optional<std::pair<std::string, std::string>> separators;
    bool sortKeys = false;
};
std::string toJson(const Value& v, const JsonOptions& opt);

// UTF-8 helpers (invalid bytes decode to U+FFFD; they cannot reach us from valid JSON input).
// Encoding one code point: appendUtf8 in core/strings.h.
std::u32string utf8Decode(const std::string& s);
std::string utf8Encode(const std::u32string& s);
size_t utf8Length(const std::string& s);
// Python's str.isspace() for one code point (includes U+001C..U+001F, U+0085, U+00A0, U+3000...).
bool isPyWhitespace(char32_t cp);

} // namespace coli::jinja
