#include "chat/jinja_builtins.h"

#include "chat/jinja_budget.h"
#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <set>

namespace coli::jinja {

namespace {

const std::set<std::string> kFilters = {
    "abs",        "capitalize", "count",      "d",       "default", "first", "float",
    "int",        "items",      "join",       "last",    "length",  "list",  "lower",
    "map",        "reject",     "rejectattr", "replace", "reverse", "safe",  "select",
    "selectattr", "string",     "title",      "tojson",  "trim",    "upper"};

const std::set<std::string> kTests = {
    "defined",     "undefined", "none",        "string",  "number",   "integer",  "float",
    "boolean",     "true",      "false",       "mapping", "iterable", "sequence", "callable",
    "odd",         "even",      "divisibleby", "eq",      "equalto",  "==",       "ne",
    "!=",          "lt",        "lessthan",    "<",       "le",       "<=",       "gt",
    "greaterthan", ">",         "ge",          ">=",      "in"};

// Python methods we do not implement: looking one up is Unsupported rather than undefined, so a
// template relying on them fails loudly.
const std::set<std::string> kPyStrMethods = {
    "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
    "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
    "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
    "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
    "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
    "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
    "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
    "swapcase",     "title",       "translate", "upper",      "zfill"};
const std::set<std::string> kPyDictMethods = {"clear",      "copy",   "fromkeys", "get",
                                              "items",      "keys",   "pop",      "popitem",
                                              "setdefault", "update", "values"};
const std::set<std::string> kPyListMethods = {"append", "clear",   "copy",   "count",
                                              "extend", "index",   "insert", "pop",
                                              "remove", "reverse", "sort"};

[[noreturn]] void typeError(const std::string& msg) {
    fail(ErrorCode::Malformed, msg);
}

[[noreturn]] void undefinedError(const Value& v, const std::string& what) {
    std::string hint = v.undefinedHint().empty() ? "value" : v.undefinedHint();
    fail(ErrorCode::InvalidArgument, hint + " is undefined (" + what + ")");
}

const std::string& requireString(const Value& v, const std::string& what) {
    if (!v.isString())
        typeError(what + " must be a string, not '" + std::string(v.typeName()) + "'");
    return v.asString();
}

int64_t requireInt(const Value& v, const std::string& what) {
    // Python operators on jinja2's Undefined raise UndefinedError.
    if (v.isUndefined()) undefinedError(v, what);
    if (!v.isInt() && !v.isBool())
        typeError(what + " must be an integer, not '" + std::string(v.typeName()) + "'");
    return v.asInt();
}

std::shared_ptr<const Callable> method(std::string name, std::function<Value(const CallArgs&)> fn) {
    return std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
}

// ---- string helpers with Python semantics ----

std::string stripChars(const std::string& s, const Value* chars, bool left, bool right) {
    std::u32string cps = utf8Decode(s);
    std::u32string set;
    bool useSet = chars && !chars->isNone();
    if (useSet) set = utf8Decode(requireString(*chars, "strip() argument"));
    auto strip = [&](char32_t c) {
        return useSet ? set.find(c) != std::u32string::npos : isPyWhitespace(c);
    };
    size_t b = 0, e = cps.size();
    if (left) {
        while (b < e && strip(cps[b]))
            ++b;
    }
    if (right) {
        while (e > b && strip(cps[e - 1]))
            --e;
    }
    return utf8Encode(cps.substr(b, e - b));
}

ValueList splitString(const std::string& s, const Value* sep, int64_t maxsplit) {
    ValueList out;
    if (!sep || sep->isNone()) {
        std::u32string cps = utf8Decode(s);
        size_t i = 0;
        while (i < cps.size()) {
            while (i < cps.size() && isPyWhitespace(cps[i]))
                ++i;
            if (i >= cps.size()) break;
            if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
                size_t e = cps.size();
                while (e > i && isPyWhitespace(cps[e - 1]))
                    --e;
                out.emplace_back(utf8Encode(cps.substr(i, e - i)));
                return out;
            }
            size_t j = i;
            while (j < cps.size() && !isPyWhitespace(cps[j]))
                ++j;
            out.emplace_back(utf8Encode(cps.substr(i, j - i)));
            i = j;
        }
        return out;
    }
    const std::string& d = requireString(*sep, "split() separator");
    if (d.empty()) fail(ErrorCode::Malformed, "split(): empty separator");
    size_t pos = 0;
    while (true) {
        if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) break;
        size_t f = s.find(d, pos);
        if (f == std::string::npos) break;
        out.emplace_back(s.substr(pos, f - pos));
        pos = f + d.size();
    }
    out.emplace_back(s.substr(pos));
    return out;
}

// The result can be far larger than s (every match replaced by a long `to`): it is checked
// against the render's budget as it grows, before it is allocated.
std::string replaceString(const std::string& s, const std::string& from, const std::string& to,
                          int64_t count) {
    std::string out;
    if (from.empty()) { // Python inserts `to` around every character
        std::u32string cps = utf8Decode(s);
        int64_t n = 0;
        for (char32_t c : cps) {
            if (count < 0 || n < count) {
                checkBytes(stringCost(out.size() + to.size() + 4));
                out += to;
                ++n;
            }
            appendUtf8(out, c);
        }
        if (count < 0 || n < count) out += to;
        return out;
    }
    size_t pos = 0;
    int64_t n = 0;
    while (count < 0 || n < count) {
        size_t f = s.find(from, pos);
        if (f == std::string::npos) break;
        checkBytes(stringCost(out.size() + (f - pos) + to.size()));
        out.append(s, pos, f - pos);
        out += to;
        pos = f + from.size();
        ++n;
    }
    return out + s.substr(pos);
}

// Case mapping is ASCII only; other scripts need Unicode tables we do not carry, so they are
// refused instead of being left unchanged.
std::string asciiCase(const std::string& s, const char* what, int (*fn)(int)) {
    for (char c : s) {
        if (static_cast<unsigned char>(c) >= 0x80)
            fail(ErrorCode::Unsupported, std::string(what) + " of non-ASCII text");
    }
    std::string out = s;
    for (char& c : out)
        c = char(fn(static_cast<unsigned char>(c)));
    return out;
}

std::string capitalize(const std::string& s) {
    std::string lower = asciiCase(s, "capitalize", [](int c) { return std::tolower(c); });
    if (!lower.empty()) lower[0] = char(std::toupper(static_cast<unsigned char>(lower[0])));
    return lower;
}

// jinja2's do_title: words start after runs of "-", whitespace, "(", "{", "[", "<".
std::string jinjaTitle(const std::string& s) {
    std::string lower = asciiCase(s, "title", [](int c) { return std::tolower(c); });
    bool start = true;
    for (char& c : lower) {
        bool sepChar = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
                       isPyWhitespace(char32_t(static_cast<unsigned char>(c)));
        if (sepChar) {
            start = true;
        } else {
            if (start) c = char(std::toupper(static_cast<unsigned char>(c)));
            start = false;
        }
    }
    return lower;
}

int64_t findCodePoints(const std::string& s, const std::string& sub) {
    size_t f = s.find(sub);
    if (f == std::string::npos) return -1;
    return int64_t(utf8Length(s.substr(0, f)));
}

bool matchesAffix(const std::string& s, const Value& affix, bool prefix) {
    auto one = [&](const Value& v) {
        const std::string& a =
            requireString(v, prefix ? "startswith() argument" : "endswith() argument");
        if (a.size() > s.size()) return false;
        return prefix ? s.compare(0, a.size(), a) == 0
                      : s.compare(s.size() - a.size(), a.size(), a) == 0;
    };
    if (affix.isList()) {
        for (const Value& v : affix.asList()) {
            if (one(v)) return true;
        }
        return false;
    }
    return one(affix);
}

Value stringMethod(const std::string& s, const std::string& name) {
    auto bind = [&](auto fn) {
        std::string copy = s;
        return Value(method("str." + name, [copy, fn](const CallArgs& a) { return fn(copy, a); }));
    };
    if (name == "startswith" || name == "endswith") {
        bool prefix = name == "startswith";
        return bind([prefix](const std::string& str, const CallArgs& a) {
            if (a.args.size() != 1 || !a.kwargs.empty())
                fail(ErrorCode::Unsupported, std::string(prefix ? "startswith" : "endswith") +
                                                 "() with start/end arguments");
            return Value(matchesAffix(str, a.args[0], prefix));
        });
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        bool l = name != "rstrip", r = name != "lstrip";
        return bind([l, r](const std::string& str, const CallArgs& a) {
            std::optional<Value> chars = a.get(0, "chars");
            return Value(stripChars(str, chars ? &*chars : nullptr, l, r));
        });
    }
    if (name == "split") {
        return bind([](const std::string& str, const CallArgs& a) {
            std::optional<Value> sep = a.get(0, "sep");
            std::optional<Value> maxsplit = a.get(1, "maxsplit");
            return Value(splitString(str, sep ? &*sep : nullptr,
                                     maxsplit ? requireInt(*maxsplit, "maxsplit") : -1));
        });
    }
    if (name == "replace") {
        return bind([](const std::string& str, const CallArgs& a) {
            if (a.args.size() < 2) typeError("replace() takes at least 2 arguments");
            std::optional<Value> count = a.get(2, "count");
            return Value(replaceString(str, requireString(a.args[0], "replace() argument"),
                                       requireString(a.args[1], "replace() argument"),
                                       count ? requireInt(*count, "count") : -1));
        });
    }
    if (name == "upper" || name == "lower") {
        bool up = name == "upper";
        return bind([up](const std::string& str, const CallArgs&) {
            return Value(up ? asciiCase(str, "upper()", [](int c) { return std::toupper(c); })
                            : asciiCase(str, "lower()", [](int c) { return std::tolower(c); }));
        });
    }
    if (name == "capitalize") {
        return bind([](const std::string& str, const CallArgs&) { return Value(capitalize(str)); });
    }
    if (name == "find") {
        return bind([](const std::string& str, const CallArgs& a) {
            if (a.args.size() != 1) fail(ErrorCode::Unsupported, "find() with start/end");
            return Value(findCodePoints(str, requireString(a.args[0], "find() argument")));
        });
    }
    if (name == "count") {
        return bind([](const std::string& str, const CallArgs& a) {
            if (a.args.size() != 1) fail(ErrorCode::Unsupported, "count() with start/end");
            const std::string& sub = requireString(a.args[0], "count() argument");
            if (sub.empty()) return Value(int64_t(utf8Length(str) + 1));
            int64_t n = 0;
            for (size_t p = str.find(sub); p != std::string::npos;
                 p = str.find(sub, p + sub.size()))
                ++n;
            return Value(n);
        });
    }
    if (name == "join") {
        return bind([](const std::string& str, const CallArgs& a) {
            if (a.args.size() != 1) typeError("join() takes exactly one argument");
            std::string out;
            bool first = true;
            for (const Value& v : iterate(a.args[0])) {
                const std::string& item = requireString(v, "join() item");
                // The items may be one large string many times over: check before growing.
                checkBytes(stringCost(out.size() + (first ? 0 : str.size()) + item.size()));
                if (!first) out += str;
                first = false;
                out += item;
            }
            return Value(std::move(out));
        });
    }
    if (name == "removeprefix" || name == "removesuffix") {
        bool prefix = name == "removeprefix";
        return bind([prefix](const std::string& str, const CallArgs& a) {
            if (a.args.size() != 1) typeError("removeprefix()/removesuffix() take one argument");
            const std::string& x = requireString(a.args[0], "argument");
            if (x.empty() || !matchesAffix(str, a.args[0], prefix)) return Value(str);
            return Value(prefix ? str.substr(x.size()) : str.substr(0, str.size() - x.size()));
        });
    }
    if (kPyStrMethods.count(name)) fail(ErrorCode::Unsupported, "string method '" + name + "'");
    return Value::undefined("'str object' has no attribute '" + name + "'");
}

ValueList dictItems(const ValueDict& d) {
    ValueList out;
    for (const auto& [k, v] : d.items)
        out.push_back(Value::tuple(ValueList{Value(k), v}));
    return out;
}

Value dictMethod(const std::shared_ptr<ValueDict>& d, const std::string& name) {
    if (name == "items" || name == "keys" || name == "values") {
        return Value(method("dict." + name, [d, name](const CallArgs&) {
            if (name == "items") return Value::dictView("dict_items", dictItems(*d));
            ValueList out;
            for (const auto& [k, v] : d->items)
                out.push_back(name == "keys" ? Value(k) : v);
            return Value::dictView(name == "keys" ? "dict_keys" : "dict_values", std::move(out));
        }));
    }
    if (name == "get") {
        return Value(method("dict.get", [d](const CallArgs& a) {
            if (a.args.empty()) typeError("get() takes at least 1 argument");
            std::optional<Value> dflt = a.get(1, "default");
            if (a.args[0].isString()) {
                if (const Value* v = d->find(a.args[0].asString())) return *v;
            }
            return dflt ? *dflt : Value::none();
        }));
    }
    fail(ErrorCode::Unsupported, "dict method '" + name + "'");
}

int64_t toIntOr(const Value& v, int64_t dflt) {
    if (v.isUndefined()) undefinedError(v, "int filter"); // int(Undefined) raises in jinja2
    if (v.isInt() || v.isBool()) return v.asInt();
    if (v.isFloat()) return std::isfinite(v.asDouble()) ? int64_t(v.asDouble()) : dflt;
    if (v.isString()) {
        std::string s = stripChars(v.asString(), nullptr, true, true);
        if (s.empty()) return dflt;
        char* end = nullptr;
        errno = 0;
        long long i = std::strtoll(s.c_str(), &end, 10);
        if (*end == '\0' && errno == 0) return i;
        double d = std::strtod(s.c_str(), &end); // jinja's do_int falls back to int(float(s))
        if (*end == '\0' && std::isfinite(d)) return int64_t(d);
    }
    return dflt;
}

double toFloatOr(const Value& v, double dflt) {
    if (v.isUndefined()) undefinedError(v, "float filter");
    if (v.isNumber()) return v.asDouble();
    if (v.isString()) {
        std::string s = stripChars(v.asString(), nullptr, true, true);
        char* end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && *end == '\0') return d;
    }
    return dflt;
}

// jinja2's make_attrgetter: "a.b.0" looks up item/attribute a, then b, then index 0.
Value attributePath(const Value& item, const std::string& path) {
    Value cur = item;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part =
            path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
        cur = digits ? getItem(cur, Value(int64_t(std::stoll(part)))) : getItem(cur, Value(part));
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

// select / reject / selectattr / rejectattr (jinja2's prepare_select_or_reject).
Value selectOrReject(const Value& input, const CallArgs& a, bool select, bool byAttr) {
    size_t off = 0;
    std::string attr;
    if (byAttr) {
        if (a.args.empty() || !a.args[0].isString())
            typeError("selectattr/rejectattr need an attribute name");
        attr = a.args[0].asString();
        off = 1;
    }
    if (!a.kwargs.empty()) fail(ErrorCode::Unsupported, "keyword arguments to select/reject tests");
    std::string test;
    std::vector<Value> testArgs;
    if (a.args.size() > off) {
        if (!a.args[off].isString()) typeError("select/reject test name must be a string");
        test = a.args[off].asString();
        if (!isKnownTest(test)) fail(ErrorCode::Unsupported, "test '" + test + "'");
        testArgs.assign(a.args.begin() + long(off) + 1, a.args.end());
    }
    ValueList out;
    for (const Value& item : iterate(input)) {
        Value v = byAttr ? attributePath(item, attr) : item;
        bool pass = test.empty() ? truthy(v) : applyTest(test, v, testArgs);
        if (pass == select) out.push_back(item);
    }
    return Value::generator(std::move(out));
}

// map(filter, args...) or map(attribute="a.b", default=x) (jinja2's prepare_map).
Value mapFilter(const Value& input, const CallArgs& a) {
    std::optional<Value> attribute;
    std::optional<Value> dflt;
    CallArgs rest;
    for (const auto& [k, v] : a.kwargs) {
        if (k == "attribute")
            attribute = v;
        else if (k == "default")
            dflt = v;
        else
            rest.kwargs.emplace_back(k, v);
    }
    ValueList out;
    if (a.args.empty() && attribute) {
        if (!rest.kwargs.empty()) typeError("map(attribute=...) takes only 'default'");
        if (!attribute->isString()) typeError("map attribute must be a string");
        for (const Value& item : iterate(input)) {
            Value v = attributePath(item, attribute->asString());
            out.push_back(v.isUndefined() && dflt ? *dflt : v);
        }
        return Value::generator(std::move(out));
    }
    if (a.args.empty() || !a.args[0].isString()) typeError("map requires a filter argument");
    const std::string& filter = a.args[0].asString();
    if (!isKnownFilter(filter)) fail(ErrorCode::Unsupported, "filter '" + filter + "'");
    rest.args.assign(a.args.begin() + 1, a.args.end());
    if (attribute) rest.kwargs.emplace_back("attribute", *attribute);
    if (dflt) rest.kwargs.emplace_back("default", *dflt);
    for (const Value& item : iterate(input))
        out.push_back(applyFilter(filter, item, rest));
    return Value::generator(std::move(out));
}

// dict(...) and namespace(...): the positional dicts' items in order, then the keyword arguments.
// namespace() does not take another namespace as a positional argument.
Value mergedDict(const CallArgs& a, bool isNamespace) {
    auto d = std::make_shared<ValueDict>();
    d->isNamespace = isNamespace;
    for (const Value& init : a.args) {
        if (!init.isDict() || (isNamespace && init.asDict()->isNamespace))
            typeError(std::string(isNamespace ? "namespace" : "dict") +
                      "() positional argument must be a dict");
        for (const auto& [k, v] : init.asDict()->items)
            d->set(k, v);
    }
    for (const auto& [k, v] : a.kwargs)
        d->set(k, v);
    return Value(d);
}

} // namespace

bool isKnownFilter(const std::string& name) {
    return kFilters.count(name) > 0;
}
bool isKnownTest(const std::string& name) {
    return kTests.count(name) > 0;
}

ValueList iterate(const Value& v) {
    switch (v.kind()) {
    case Value::Kind::Undefined:
        return {};
    case Value::Kind::List:
        chargeOps(v.asList().size());
        return v.isGenerator() ? v.consumeGenerator() : v.asList();
    case Value::Kind::String: {
        ValueList out;
        for (char32_t c : utf8Decode(v.asString())) {
            std::string s;
            appendUtf8(s, c);
            out.emplace_back(std::move(s));
        }
        return out;
    }
    case Value::Kind::Dict:
        if (!v.asDict()->isNamespace) {
            ValueList out;
            for (const auto& [k, item] : v.asDict()->items)
                out.emplace_back(k);
            return out;
        }
        break;
    default:
        break;
    }
    typeError(std::string("'") + v.typeName() + "' object is not iterable");
}

int64_t length(const Value& v) {
    switch (v.kind()) {
    case Value::Kind::Undefined:
        return 0;
    case Value::Kind::String:
        return int64_t(utf8Length(v.asString()));
    case Value::Kind::List:
        if (v.isGenerator()) break;
        return int64_t(v.asList().size());
    case Value::Kind::Dict:
        if (!v.asDict()->isNamespace) return int64_t(v.asDict()->items.size());
        break;
    default:
        break;
    }
    typeError(std::string("object of type '") + v.typeName() + "' has no len()");
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
    case Value::Kind::Undefined:
        return false;
    case Value::Kind::String:
        if (!item.isString())
            typeError(std::string("'in <string>' requires string as left operand, not ") +
                      item.typeName());
        return container.asString().find(item.asString()) != std::string::npos;
    case Value::Kind::List:
        if (container.isGenerator())
            fail(ErrorCode::Unsupported, "'in' on a generator (add '| list')");
        for (const Value& v : container.asList()) {
            chargeOps();
            if (equals(v, item)) return true;
        }
        return false;
    case Value::Kind::Dict:
        if (container.asDict()->isNamespace) break;
        if ((item.isList() && !item.isTuple()) || item.isDict())
            typeError(std::string("unhashable type: '") + item.typeName() + "'");
        return item.isString() && container.asDict()->find(item.asString()) != nullptr;
    default:
        break;
    }
    typeError(std::string("argument of type '") + container.typeName() + "' is not iterable");
}

Value getAttribute(const Value& obj, const std::string& name) {
    if (obj.isUndefined()) undefinedError(obj, "reading attribute '" + name + "'");
    if (!name.empty() && name[0] == '_') // the sandbox hides private attributes
        return Value::undefined("attribute '" + name + "'");
    switch (obj.kind()) {
    case Value::Kind::Dict: {
        const auto& d = obj.asDict();
        if (!d->isNamespace && kPyDictMethods.count(name)) return dictMethod(d, name);
        if (const Value* v = d->find(name)) return *v;
        return Value::undefined(std::string("'") + (d->isNamespace ? "Namespace" : "dict") +
                                " object' has no attribute '" + name + "'");
    }
    case Value::Kind::String:
        return stringMethod(obj.asString(), name);
    case Value::Kind::List:
        if (kPyListMethods.count(name)) fail(ErrorCode::Unsupported, "list method '" + name + "'");
        break;
    default:
        break;
    }
    return Value::undefined(std::string("'") + obj.typeName() + " object' has no attribute '" +
                            name + "'");
}

Value getItem(const Value& obj, const Value& index) {
    if (obj.isUndefined()) undefinedError(obj, "subscript");
    switch (obj.kind()) {
    case Value::Kind::List:
    case Value::Kind::String: {
        if (obj.isGenerator()) return Value::undefined("'generator' object is not subscriptable");
        if (!index.isInt() && !index.isBool()) {
            if (index.isString()) return getAttribute(obj, index.asString());
            break;
        }
        int64_t i = index.asInt();
        if (obj.isList()) {
            const ValueList& l = obj.asList();
            int64_t n = int64_t(l.size());
            int64_t j = i < 0 ? i + n : i;
            if (j < 0 || j >= n)
                return Value::undefined("list object has no element " + std::to_string(i));
            return l[size_t(j)];
        }
        std::u32string cps = utf8Decode(obj.asString());
        int64_t n = int64_t(cps.size());
        int64_t j = i < 0 ? i + n : i;
        if (j < 0 || j >= n)
            return Value::undefined("str object has no element " + std::to_string(i));
        std::string out;
        appendUtf8(out, cps[size_t(j)]);
        return Value(out);
    }
    case Value::Kind::Dict:
        if (index.isString()) {
            if (!obj.asDict()->isNamespace) {
                if (const Value* v = obj.asDict()->find(index.asString())) return *v;
            }
            return getAttribute(obj, index.asString());
        }
        return Value::undefined("dict object has no element " + toRepr(index));
    default:
        break;
    }
    return Value::undefined(std::string(obj.typeName()) + " object has no element " +
                            toRepr(index));
}

Value getSlice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
    if (obj.isUndefined()) undefinedError(obj, "slice");
    // jinja2 compiles slices to a plain Python subscript (no getitem fallback): a TypeError.
    if ((!obj.isList() && !obj.isString()) || obj.isGenerator())
        typeError(std::string("'") + obj.typeName() + "' object is not subscriptable");
    auto opt = [](const Value* v) -> std::optional<int64_t> {
        if (!v || v->isNone()) return std::nullopt;
        if (v->isUndefined()) // Python: TypeError, slice() does not touch Undefined's operators
            typeError("slice indices must be integers or None");
        return requireInt(*v, "slice index");
    };
    int64_t st = opt(step).value_or(1);
    if (st == 0) fail(ErrorCode::Malformed, "slice step cannot be zero");
    std::u32string cps;
    int64_t n;
    if (obj.isList()) {
        n = int64_t(obj.asList().size());
    } else {
        cps = utf8Decode(obj.asString());
        n = int64_t(cps.size());
    }
    // CPython's PySlice_AdjustIndices.
    int64_t lower = st > 0 ? 0 : -1, upper = st > 0 ? n : n - 1;
    auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
        if (!v) return dflt;
        int64_t x = *v;
        if (x < 0) {
            x += n;
            if (x < lower) x = lower;
        } else if (x > upper) {
            x = upper;
        }
        return x;
    };
    int64_t b = adjust(opt(start), st > 0 ? lower : upper);
    int64_t e = adjust(opt(stop), st > 0 ? upper : lower);
    ValueList items;
    std::u32string chars;
    for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
        if (obj.isList())
            items.push_back(obj.asList()[size_t(i)]);
        else
            chars += cps[size_t(i)];
    }
    if (obj.isList())
        return obj.isTuple() ? Value::tuple(std::move(items)) : Value(std::move(items));
    return Value(utf8Encode(chars));
}

Value applyFilter(const std::string& name, const Value& input, const CallArgs& a) {
    if (name == "length" || name == "count") return Value(length(input));
    if (name == "string") return Value(toStr(input));
    if (name == "safe") return input;
    if (name == "trim") {
        std::optional<Value> chars = a.get(0, "chars");
        return Value(stripChars(toStr(input), chars ? &*chars : nullptr, true, true));
    }
    if (name == "tojson") {
        // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None,
        // sort_keys=False) -> json.dumps(...)
        JsonOptions opt;
        if (auto v = a.get(0, "ensure_ascii")) opt.ensureAscii = truthy(*v);
        if (auto v = a.get(1, "indent"); v && !v->isNone()) {
            if (v->isString())
                opt.indent = v->asString();
            else {
                const auto n = size_t(std::max<int64_t>(0, requireInt(*v, "indent")));
                checkBytes(n);
                opt.indent = std::string(n, ' ');
            }
        }
        if (auto v = a.get(2, "separators"); v && !v->isNone()) {
            if (!v->isList() || v->asList().size() != 2)
                typeError("tojson separators must be a pair of strings");
            opt.separators = std::make_pair(requireString(v->asList()[0], "separator"),
                                            requireString(v->asList()[1], "separator"));
        }
        if (auto v = a.get(3, "sort_keys")) opt.sortKeys = truthy(*v);
        return Value(toJson(input, opt));
    }
    if (name == "default" || name == "d") {
        Value dflt = a.get(0, "default_value").value_or(Value(""));
        bool boolean = truthy(a.get(1, "boolean").value_or(Value(false)));
        if (input.isUndefined() || (boolean && !truthy(input))) return dflt;
        return input;
    }
    if (name == "first" || name == "last") {
        if (name == "last" && input.isGenerator())
            typeError("'generator' object is not reversible (add '| list' before '| last')");
        ValueList items = iterate(input);
        if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
        return name == "first" ? items.front() : items.back();
    }
    if (name == "upper")
        return Value(asciiCase(toStr(input), "upper", [](int c) { return std::toupper(c); }));
    if (name == "lower")
        return Value(asciiCase(toStr(input), "lower", [](int c) { return std::tolower(c); }));
    if (name == "capitalize") return Value(capitalize(toStr(input)));
    if (name == "title") return Value(jinjaTitle(toStr(input)));
    if (name == "join") {
        if (a.get(1, "attribute")) fail(ErrorCode::Unsupported, "join(attribute=...)");
        std::string sep = toStr(a.get(0, "d").value_or(Value("")));
        std::string out;
        bool first = true;
        for (const Value& v : iterate(input)) {
            // The items may be one large string many times over: check before growing.
            if (v.isString()) checkBytes(stringCost(out.size() + sep.size() + v.asString().size()));
            if (!first) out += sep;
            first = false;
            out += toStr(v);
            checkBytes(stringCost(out.size()));
        }
        return Value(std::move(out));
    }
    if (name == "replace") {
        if (a.args.size() < 2) typeError("replace filter takes at least 2 arguments");
        std::optional<Value> count = a.get(2, "count");
        return Value(replaceString(toStr(input), toStr(a.args[0]), toStr(a.args[1]),
                                   count && !count->isNone() ? requireInt(*count, "count") : -1));
    }
    if (name == "items") { // a generator in jinja2 3.1 (do_items yields the pairs)
        if (input.isUndefined()) return Value::generator({});
        if (!input.isDict() || input.asDict()->isNamespace)
            typeError("items filter: can only get item pairs from a mapping");
        return Value::generator(dictItems(*input.asDict()));
    }
    if (name == "list") return Value(iterate(input));
    if (name == "select" || name == "reject")
        return selectOrReject(input, a, name == "select", false);
    if (name == "selectattr" || name == "rejectattr")
        return selectOrReject(input, a, name == "selectattr", true);
    if (name == "map") return mapFilter(input, a);
    if (name == "int") return Value(toIntOr(input, toIntOr(a.get(0, "default").value_or(0), 0)));
    if (name == "float")
        return Value(toFloatOr(input, toFloatOr(a.get(0, "default").value_or(0.0), 0.0)));
    if (name == "abs") {
        if (input.isFloat()) return Value(std::fabs(input.asDouble()));
        if (!input.isNumber())
            typeError(std::string("bad operand type for abs(): '") + input.typeName() + "'");
        int64_t i = requireInt(input, "abs() argument");
        return Value(i < 0 ? -i : i);
    }
    if (name == "reverse") {
        // jinja2: value[::-1] for strings, else reversed(value) (an iterator), else a list.
        if (input.isString()) {
            std::u32string cps = utf8Decode(input.asString());
            std::reverse(cps.begin(), cps.end());
            return Value(utf8Encode(cps));
        }
        if (!input.isList() && !input.isDict() && !input.isUndefined())
            typeError("reverse filter: argument must be iterable");
        bool lazy = !input.isGenerator();
        ValueList items = iterate(input);
        std::reverse(items.begin(), items.end());
        return lazy ? Value::generator(std::move(items)) : Value(std::move(items));
    }
    fail(ErrorCode::Unsupported, "filter '" + name + "'");
}

bool applyTest(const std::string& name, const Value& v, const std::vector<Value>& args) {
    auto arg = [&]() -> const Value& {
        if (args.empty()) typeError("test '" + name + "' needs an argument");
        return args[0];
    };
    if (name == "defined") return !v.isUndefined();
    if (name == "undefined") return v.isUndefined();
    if (name == "none") return v.isNone();
    if (name == "string") return v.isString();
    if (name == "number") return v.isNumber();
    if (name == "integer") return v.isInt();
    if (name == "float") return v.isFloat();
    if (name == "boolean") return v.isBool();
    if (name == "true") return v.isBool() && v.asBool();
    if (name == "false") return v.isBool() && !v.asBool();
    if (name == "mapping") return v.isDict() && !v.asDict()->isNamespace;
    if (name == "iterable" || name == "sequence")
        return v.isUndefined() || v.isString() || v.isList() ||
               (v.isDict() && !v.asDict()->isNamespace);
    if (name == "callable") return v.isCallable() || v.isUndefined(); // Undefined has __call__
    if (name == "odd" || name == "even" || name == "divisibleby") {
        // jinja2: value % 2 == 1, value % 2 == 0, value % num == 0 (Python modulo, floats too).
        const Value& d = name == "divisibleby" ? arg() : Value(int64_t(2));
        if (v.isUndefined()) undefinedError(v, "test '" + name + "'");
        if (d.isUndefined()) undefinedError(d, "test '" + name + "'");
        if (!v.isNumber() || !d.isNumber())
            typeError("test '" + name + "' needs numbers, got '" + std::string(v.typeName()) +
                      "' and '" + d.typeName() + "'");
        if (d.asDouble() == 0.0) fail(ErrorCode::Malformed, "integer division or modulo by zero");
        double m;
        if (v.isFloat() || d.isFloat()) {
            m = std::fmod(v.asDouble(), d.asDouble());
            if (m != 0 && ((m < 0) != (d.asDouble() < 0))) m += d.asDouble();
        } else {
            int64_t r = v.asInt() % d.asInt();
            if (r != 0 && ((r < 0) != (d.asInt() < 0))) r += d.asInt();
            m = double(r);
        }
        if (name == "odd") return m == 1.0;
        return m == 0.0;
    }
    if (name == "eq" || name == "equalto" || name == "==") return equals(v, arg());
    if (name == "ne" || name == "!=") return !equals(v, arg());
    if (name == "lt" || name == "lessthan" || name == "<") return lessThan(v, arg());
    if (name == "le" || name == "<=") return !lessThan(arg(), v);
    if (name == "gt" || name == "greaterthan" || name == ">") return lessThan(arg(), v);
    if (name == "ge" || name == ">=") return !lessThan(v, arg());
    if (name == "in") return contains(arg(), v);
    fail(ErrorCode::Unsupported, "test '" + name + "'");
}

Value makeGlobalFunction(const std::string& name) {
    if (name == "namespace")
        return Value(method("namespace", [](const CallArgs& a) { return mergedDict(a, true); }));
    if (name == "dict")
        return Value(method("dict", [](const CallArgs& a) { return mergedDict(a, false); }));
    if (name == "range") {
        return Value(method("range", [](const CallArgs& a) {
            if (a.args.empty() || a.args.size() > 3 || !a.kwargs.empty())
                typeError("range expected 1 to 3 integer arguments");
            for (const Value& v : a.args) {
                if (v.isUndefined()) typeError("range() arguments must be integers");
            }
            int64_t start = 0, stop, step = 1;
            if (a.args.size() == 1) {
                stop = requireInt(a.args[0], "range() argument");
            } else {
                start = requireInt(a.args[0], "range() argument");
                stop = requireInt(a.args[1], "range() argument");
                if (a.args.size() == 3) step = requireInt(a.args[2], "range() argument");
            }
            if (step == 0) fail(ErrorCode::Malformed, "range() arg 3 must not be zero");
            // jinja2's sandbox refuses ranges over MAX_RANGE = 100000 items.
            int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                     : (start > stop ? (start - stop - step - 1) / -step : 0);
            if (count > 100000)
                fail(ErrorCode::Malformed, "range too big (the sandbox allows 100000 items)");
            ValueList out;
            for (int64_t i = 0; i < count; ++i)
                out.emplace_back(start + i * step);
            return Value(out);
        }));
    }
    if (name == "strftime_now") {
        // transformers: datetime.now().strftime(format), i.e. local time through C strftime.
        return Value(method("strftime_now", [](const CallArgs& a) {
            if (a.args.size() != 1 || !a.args[0].isString())
                typeError("strftime_now() takes one format string");
            std::time_t now = std::time(nullptr);
            std::tm local{};
            localtime_r(&now, &local);
            char buf[512];
            size_t n = std::strftime(buf, sizeof buf, a.args[0].asString().c_str(), &local);
            if (n == 0 && !a.args[0].asString().empty())
                fail(ErrorCode::Unsupported, "strftime_now() format producing no or too much text");
            return Value(std::string(buf, n));
        }));
    }
    return Value::undefined("'" + name + "'");
}

} // namespace coli::jinja
