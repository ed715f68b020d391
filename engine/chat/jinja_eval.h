#pragma once
// A parsed Jinja2 template and its evaluator. Scoping follows jinja2: each for-loop iteration
// gets a fresh scope (a {% set %} inside the body does not survive the iteration or the loop;
// namespace() objects carry state out), if-blocks share the enclosing scope. Globals available
// to templates: raise_exception(msg) and strftime_now(fmt) (transformers' helpers), namespace(),
// range(), dict().
// Errors (JinjaError, with line:column of the innermost expression involved):
//   InvalidArgument - raise_exception() (raisedByTemplate set, message is the template's text),
//                     use of an undefined value in an operation (e.g. messages[0].role on an empty
//                     conversation), the render's memory or operation budget exceeded
//                     (chat/render_budget.h), values nested more than kMaxNesting levels;
//   Malformed       - type errors (str + int, iterating None, division by zero...);
//   Unsupported     - calls of unknown functions or unimplemented Python methods;
//   Cancelled       - the cancel flag turned true.
// Thread-safety: a Template is immutable after parse(); render() may run concurrently.
#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"
#include "chat/render_budget.h"

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace coli::jinja {

using Variables = std::vector<std::pair<std::string, Value>>;

class Template {
public:
    // Throws JinjaError (Malformed / Unsupported with line:column).
    static std::unique_ptr<Template> parse(const std::string& source);
    // Throws JinjaError. Runs within `limits`; cancel (may be null) is polled at every operation,
    // so a render stops within microseconds of it turning true. usage (may be null) receives
    // what the render used, also when it failed.
    std::string render(const Variables& variables, const RenderLimits& limits = {},
                       const std::atomic<bool>* cancel = nullptr,
                       RenderUsage* usage = nullptr) const;

    Template(const Template&) = delete;
    Template& operator=(const Template&) = delete;

private:
    Template() = default;
    std::string m_source; // normalized
    std::unique_ptr<SourceMap> m_map;
    Body m_body;
};

} // namespace coli::jinja
