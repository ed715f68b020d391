#include "chat/jinja_value.h"

#include "chat/jinja_budget.h"
#include "core/strings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace coli::jinja {

void fail(ErrorCode code, std::string message) {
    throw JinjaError{code, std::move(message)};
}

const Value* ValueDict::find(const std::string& key) const {
    for (const auto& [k, v] : items) {
        if (k == key) return &v;
    }
    return nullptr;
}

namespace {

constexpr int kNamespaceDepth = kMaxNesting / 2;

[[noreturn]] void tooDeep() {
    fail(ErrorCode::InvalidArgument,
         "lists or dicts nested more than " + std::to_string(kMaxNesting) + " levels deep");
}

std::shared_ptr<const ListBox> makeList(ValueList l, ListBox::Flavor flavor, std::string view) {
    int depth = 0;
    for (const Value& item : l)
        depth = std::max(depth, item.depth());
    if (depth + 1 > kMaxNesting) tooDeep();
    auto box = std::make_shared<ListBox>();
    box->charged = chargeBytes(l.size() * sizeof(Value));
    box->items = std::move(l);
    box->flavor = flavor;
    box->view = std::move(view);
    box->depth = depth + 1;
    return box;
}

} // namespace

void ValueDict::set(const std::string& key, Value v) {
    const int d = v.depth() + 1;
    if (d > kMaxNesting) tooDeep();
    // A namespace changes after it was put into lists, so their recorded nesting would go stale;
    // it counts as kNamespaceDepth wherever it is stored, and holds only values shallower than
    // that (so never another namespace, nor itself: no reference cycles either).
    if (isNamespace && d >= kNamespaceDepth)
        fail(ErrorCode::Unsupported,
             "a namespace() attribute holding a namespace() or values nested more than " +
                 std::to_string(kNamespaceDepth - 2) + " levels deep");
    for (auto& [k, old] : items) {
        if (k == key) {
            old = std::move(v);
            depth = std::max(depth, d);
            return;
        }
    }
    charged += chargeBytes(stringCost(key.size()) + sizeof(Value));
    items.emplace_back(key, std::move(v));
    depth = std::max(depth, d);
}

ValueDict::ValueDict(ValueDict&& other) noexcept
    : items(std::move(other.items)), isNamespace(other.isNamespace), depth(other.depth),
      charged(std::exchange(other.charged, 0)) {}

ValueDict::~ValueDict() {
    refundBytes(charged);
}

ListBox::~ListBox() {
    refundBytes(charged);
}

Text::~Text() {
    refundBytes(charged);
}

Value::Value(std::string s) {
    const size_t cost = chargeBytes(stringCost(s.size()));
    auto text = std::make_shared<Text>();
    text->text = std::move(s);
    text->charged = cost;
    m_v = std::move(text);
}

Value::Value(ValueList l) : m_v(makeList(std::move(l), ListBox::Flavor::List, {})) {}

Value Value::tuple(ValueList l) {
    Value v;
    v.m_v = makeList(std::move(l), ListBox::Flavor::Tuple, {});
    return v;
}

Value Value::dictView(const char* view, ValueList l) {
    Value v;
    v.m_v = makeList(std::move(l), ListBox::Flavor::List, view);
    return v;
}

Value Value::generator(ValueList l) {
    Value v;
    v.m_v = makeList(std::move(l), ListBox::Flavor::Generator, {});
    return v;
}

const std::string& Value::listView() const {
    return std::get<std::shared_ptr<const ListBox>>(m_v)->view;
}

int Value::depth() const {
    if (isList()) return std::get<std::shared_ptr<const ListBox>>(m_v)->depth;
    if (isDict()) return asDict()->isNamespace ? kNamespaceDepth : asDict()->depth;
    return 0;
}

const ValueList& Value::asList() const {
    return std::get<std::shared_ptr<const ListBox>>(m_v)->items;
}

bool Value::isTuple() const {
    return isList() &&
           std::get<std::shared_ptr<const ListBox>>(m_v)->flavor == ListBox::Flavor::Tuple;
}

ValueList Value::consumeGenerator() const {
    const auto& box = std::get<std::shared_ptr<const ListBox>>(m_v);
    if (box->consumed) return {};
    box->consumed = true;
    return box->items;
}

bool Value::isGenerator() const {
    return isList() &&
           std::get<std::shared_ptr<const ListBox>>(m_v)->flavor == ListBox::Flavor::Generator;
}

int64_t Value::asInt() const {
    if (isBool()) return asBool() ? 1 : 0;
    return std::get<int64_t>(m_v);
}

double Value::asDouble() const {
    if (isFloat()) return std::get<double>(m_v);
    return double(asInt());
}

const char* Value::typeName() const {
    switch (kind()) {
    case Kind::Undefined:
        return "Undefined";
    case Kind::None:
        return "NoneType";
    case Kind::Bool:
        return "bool";
    case Kind::Int:
        return "int";
    case Kind::Float:
        return "float";
    case Kind::String:
        return "str";
    case Kind::List:
        return "list";
    case Kind::Dict:
        return asDict()->isNamespace ? "Namespace" : "dict";
    case Kind::Callable:
        return "function";
    }
    return "?";
}

std::optional<Value> CallArgs::get(size_t index, const std::string& name) const {
    for (const auto& [k, v] : kwargs) {
        if (k == name) return v;
    }
    if (index < args.size()) return args[index];
    return std::nullopt;
}

bool truthy(const Value& v) {
    switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
        return false;
    case Value::Kind::Bool:
        return v.asBool();
    case Value::Kind::Int:
        return v.asInt() != 0;
    case Value::Kind::Float:
        return v.asDouble() != 0.0;
    case Value::Kind::String:
        return !v.asString().empty();
    case Value::Kind::List:
        return v.isGenerator() || !v.asList().empty();
    case Value::Kind::Dict:
        return v.asDict()->isNamespace || !v.asDict()->items.empty();
    case Value::Kind::Callable:
        return true;
    }
    return false;
}

std::string floatRepr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
    // Shortest round-trip digits, then Python's repr layout: fixed notation when the decimal
    // exponent is in [-4, 16), scientific otherwise (CPython float_repr_style "short", mode 'r').
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    size_t ePos = sci.find('e');
    std::string mant = sci.substr(0, ePos);
    int exp10 = std::stoi(sci.substr(ePos + 1));
    std::string digits;
    for (char c : mant) {
        if (c != '.') digits += c;
    }
    while (digits.size() > 1 && digits.back() == '0')
        digits.pop_back();
    int decpt = exp10 + 1; // digits represent 0.DIGITS * 10^decpt
    std::string out = neg ? "-" : "";
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out += "0." + std::string(size_t(-decpt), '0') + digits;
        } else if (size_t(decpt) >= digits.size()) {
            out += digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
        }
    } else {
        out += digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char e[16];
        std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
        out += e;
    }
    return out;
}

namespace {

bool isPrintableForRepr(char32_t cp) {
    // Approximates Python's str.isprintable(): control characters, the C1 range, NBSP and the
    // soft hyphen, line/paragraph separators are escaped.
    if (cp < 0x20 || cp == 0x7f) return false;
    if (cp >= 0x80 && cp <= 0xa0) return false;
    if (cp == 0xad || cp == 0x2028 || cp == 0x2029) return false;
    return true;
}

std::string reprString(const std::string& s) {
    bool hasSingle = s.find('\'') != std::string::npos;
    bool hasDouble = s.find('"') != std::string::npos;
    char quote = (hasSingle && !hasDouble) ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t cp : utf8Decode(s)) {
        if (cp == char32_t(quote) || cp == '\\') {
            out += '\\';
            out += char(cp);
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (!isPrintableForRepr(cp)) {
            char buf[16];
            if (cp <= 0xff)
                std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(cp));
            else
                std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
            out += buf;
        } else {
            appendUtf8(out, cp);
        }
    }
    out += quote;
    return out;
}

} // namespace

std::string toStr(const Value& v) {
    switch (v.kind()) {
    case Value::Kind::Undefined:
        return "";
    case Value::Kind::String:
        return v.asString();
    default:
        return toRepr(v);
    }
}

namespace {

// repr(v) appended to out. A list may hold the same large value many times, so its repr can
// outgrow everything the template built: the growing text is checked against the budget before
// it is produced.
void reprInto(std::string& out, const Value& v) {
    switch (v.kind()) {
    case Value::Kind::Undefined:
        out += "Undefined"; // repr() of jinja2's Undefined
        return;
    case Value::Kind::None:
        out += "None";
        return;
    case Value::Kind::Bool:
        out += v.asBool() ? "True" : "False";
        return;
    case Value::Kind::Int:
        out += std::to_string(v.asInt());
        return;
    case Value::Kind::Float:
        out += floatRepr(v.asDouble());
        return;
    case Value::Kind::String:
        checkBytes(out.size() + v.asString().size());
        out += reprString(v.asString());
        return;
    case Value::Kind::List: {
        if (v.isGenerator())
            fail(ErrorCode::Unsupported,
                 "printing a generator (the result of select/map...; add '| list')");
        const std::string& view = v.listView();
        if (!view.empty()) out += view + "(";
        out += v.isTuple() ? "(" : "[";
        bool first = true;
        for (const Value& item : v.asList()) {
            if (!first) out += ", ";
            first = false;
            reprInto(out, item);
            checkBytes(out.size());
        }
        if (v.isTuple() && v.asList().size() == 1) out += ",";
        out += v.isTuple() ? ")" : "]";
        if (!view.empty()) out += ")";
        return;
    }
    case Value::Kind::Dict: {
        out += v.asDict()->isNamespace ? "<Namespace {" : "{";
        bool first = true;
        for (const auto& [k, item] : v.asDict()->items) {
            if (!first) out += ", ";
            first = false;
            out += reprString(k) + ": ";
            reprInto(out, item);
            checkBytes(out.size());
        }
        out += v.asDict()->isNamespace ? "}>" : "}";
        return;
    }
    case Value::Kind::Callable:
        out += "<function " + v.asCallable().name + ">";
        return;
    }
}

} // namespace

std::string toRepr(const Value& v) {
    std::string out;
    reprInto(out, v);
    return out;
}

bool equals(const Value& a, const Value& b) {
    if (a.isNumber() && b.isNumber()) {
        if (a.isFloat() || b.isFloat()) return a.asDouble() == b.asDouble();
        return a.asInt() == b.asInt();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
        return true;
    case Value::Kind::String:
        chargeText(a.asString().size());
        return a.asString() == b.asString();
    case Value::Kind::List: {
        if (a.isGenerator() || b.isGenerator()) return false;
        if (a.isTuple() != b.isTuple()) return false;
        const ValueList& x = a.asList();
        const ValueList& y = b.asList();
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i) {
            chargeOps(); // nested lists may share items: the walk, not the memory, can explode
            if (!equals(x[i], y[i])) return false;
        }
        return true;
    }
    case Value::Kind::Dict: {
        if (a.asDict() == b.asDict()) return true;
        if (a.asDict()->isNamespace || b.asDict()->isNamespace) return false;
        const auto& x = a.asDict()->items;
        if (x.size() != b.asDict()->items.size()) return false;
        for (const auto& [k, item] : x) {
            chargeOps();
            const Value* other = b.asDict()->find(k);
            if (!other || !equals(item, *other)) return false;
        }
        return true;
    }
    case Value::Kind::Callable:
        return &a.asCallable() == &b.asCallable();
    default:
        return false;
    }
}

bool lessThan(const Value& a, const Value& b) {
    if (a.isNumber() && b.isNumber()) {
        if (a.isFloat() || b.isFloat()) return a.asDouble() < b.asDouble();
        return a.asInt() < b.asInt();
    }
    if (a.isString() && b.isString())
        return a.asString() < b.asString(); // UTF-8 byte order
                                            // == code point order
    if (a.isList() && b.isList() && a.isTuple() == b.isTuple() && !a.isGenerator() &&
        !b.isGenerator()) { // Python: lexicographic, first unequal pair decides
        const ValueList& x = a.asList();
        const ValueList& y = b.asList();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            chargeOps();
            if (!equals(x[i], y[i])) return lessThan(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    if (a.isUndefined() || b.isUndefined()) {
        fail(ErrorCode::InvalidArgument,
             (a.isUndefined() ? a : b).undefinedHint() + " is undefined (in a comparison)");
    }
    fail(ErrorCode::Malformed, std::string("'<' not supported between instances of '") +
                                   a.typeName() + "' and '" + b.typeName() + "'");
}

namespace {

void jsonString(std::string& out, const std::string& s, bool ensureAscii) {
    out += '"';
    for (char32_t cp : utf8Decode(s)) {
        switch (cp) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        default: {
            char buf[16];
            if (cp < 0x20 || (ensureAscii && cp == 0x7f)) {
                std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
                out += buf;
            } else if (ensureAscii && cp > 0x7f) {
                if (cp > 0xffff) { // UTF-16 surrogate pair, as json.dumps writes it
                    char32_t v = cp - 0x10000;
                    std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", unsigned(0xd800 + (v >> 10)),
                                  unsigned(0xdc00 + (v & 0x3ff)));
                } else {
                    std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
                }
                out += buf;
            } else {
                appendUtf8(out, cp);
            }
        }
        }
    }
    out += '"';
}

void jsonValue(std::string& out, const Value& v, const JsonOptions& opt, int level) {
    std::string itemSep = opt.indent ? "," : ", ";
    std::string keySep = ": ";
    if (opt.separators) {
        itemSep = opt.separators->first;
        keySep = opt.separators->second;
    }
    auto newline = [&](int lvl) {
        if (!opt.indent) return;
        checkBytes(out.size() + 1 + size_t(lvl) * opt.indent->size());
        out += '\n';
        for (int i = 0; i < lvl; ++i)
            out += *opt.indent;
    };
    switch (v.kind()) {
    case Value::Kind::None:
        out += "null";
        return;
    case Value::Kind::Bool:
        out += v.asBool() ? "true" : "false";
        return;
    case Value::Kind::Int:
        out += std::to_string(v.asInt());
        return;
    case Value::Kind::Float: {
        double d = v.asDouble();
        if (std::isnan(d))
            out += "NaN";
        else if (std::isinf(d))
            out += d > 0 ? "Infinity" : "-Infinity";
        else
            out += floatRepr(d);
        return;
    }
    case Value::Kind::String:
        checkBytes(out.size() + v.asString().size());
        jsonString(out, v.asString(), opt.ensureAscii);
        return;
    case Value::Kind::List: {
        if (v.isGenerator()) break;
        const ValueList& l = v.asList();
        if (l.empty()) {
            out += "[]";
            return;
        }
        out += '[';
        for (size_t i = 0; i < l.size(); ++i) {
            if (i) out += itemSep;
            newline(level + 1);
            jsonValue(out, l[i], opt, level + 1);
            checkBytes(out.size());
        }
        newline(level);
        out += ']';
        return;
    }
    case Value::Kind::Dict: {
        if (v.asDict()->isNamespace) break;
        auto items = v.asDict()->items;
        if (items.empty()) {
            out += "{}";
            return;
        }
        if (opt.sortKeys) {
            std::stable_sort(items.begin(), items.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out += itemSep;
            newline(level + 1);
            jsonString(out, items[i].first, opt.ensureAscii);
            out += keySep;
            jsonValue(out, items[i].second, opt, level + 1);
            checkBytes(out.size());
        }
        newline(level);
        out += '}';
        return;
    }
    default:
        break;
    }
    fail(ErrorCode::Malformed,
         std::string("tojson: Object of type ") + v.typeName() + " is not JSON serializable");
}

} // namespace

std::string toJson(const Value& v, const JsonOptions& opt) {
    std::string out;
    jsonValue(out, v, opt, 0);
    return out;
}

std::u32string utf8Decode(const std::string& s) {
    std::u32string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + size_t(len) > s.size()) {
            out += U'\uFFFD';
            ++i;
            continue;
        }
        char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
        bool ok = true;
        for (int k = 1; k < len; ++k) {
            unsigned char cc = static_cast<unsigned char>(s[i + size_t(k)]);
            if ((cc >> 6) != 2) {
                ok = false;
                break;
            }
            cp = (cp << 6) | (cc & 0x3f);
        }
        if (!ok) {
            out += U'\uFFFD';
            ++i;
            continue;
        }
        out += cp;
        i += size_t(len);
    }
    return out;
}

std::string utf8Encode(const std::u32string& s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t cp : s)
        appendUtf8(out, cp);
    return out;
}

size_t utf8Length(const std::string& s) {
    size_t n = 0;
    for (char c : s) {
        if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) ++n;
    }
    return n;
}

bool isPyWhitespace(char32_t cp) {
    switch (cp) {
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x1c:
    case 0x1d:
    case 0x1e:
    case 0x1f:
    case 0x20:
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200a;
    }
}

} // namespace coli::jinja
