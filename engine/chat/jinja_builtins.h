#pragma once
// Built-in filters, tests, attribute/method access, subscripts and global functions of the
// interpreter, each mirroring jinja2 3.x (jinja2/filters.py, jinja2/tests.py,
// Environment.getattr/getitem) with transformers' overrides (tojson = json.dumps with
// ensure_ascii=False, raise_exception). Python methods of str/dict/list that we do not implement
// are refused as Unsupported when looked up, never silently treated as undefined.
// All functions throw JinjaError (without position; the evaluator adds it).
// Thread-safety: pure functions.
#include "chat/jinja_value.h"

#include <string>

namespace coli::jinja {

bool isKnownFilter(const std::string& name);
bool isKnownTest(const std::string& name);

Value applyFilter(const std::string& name, const Value& input, const CallArgs& args);
bool applyTest(const std::string& name, const Value& input, const std::vector<Value>& args);

// obj.name: dict key or bound method; Undefined when missing (as jinja2 does).
Value getAttribute(const Value& obj, const std::string& name);
// obj[index]: list/str index (negative from the end), dict key; Undefined when missing.
Value getItem(const Value& obj, const Value& index);
// obj[start:stop:step] with Python semantics (null Values mean omitted); other types than
// list/tuple/str are a TypeError (Malformed), as jinja2 compiles slices to plain subscripts.
Value getSlice(const Value& obj, const Value* start, const Value* stop, const Value* step);

// The `in` operator: substring, list membership, dict key.
bool contains(const Value& container, const Value& item);
// Iteration as a for loop sees it: list items, dict keys, string characters.
ValueList iterate(const Value& v);
// len() as the length filter computes it.
int64_t length(const Value& v);

// Global functions: namespace(), range(), dict(), strftime_now() (raise_exception is bound by the
// evaluator); Undefined for other names.
Value makeGlobalFunction(const std::string& name);

} // namespace coli::jinja
