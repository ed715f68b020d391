#pragma once
// Syntax tree of a parsed template. One generic expression node keeps the tree small; the
// meaning of `children` per kind is listed below. Immutable after parsing.
#include "chat/jinja_value.h"

#include <memory>
#include <string>
#include <vector>

namespace coli::jinja {

enum class ExprKind {
    Literal,  // literal
    Name,     // name
    List,     // children: items; name "tuple" for tuples
    Dict,     // children: key0, value0, key1, value1, ...
    GetAttr,  // children: [object]; name: attribute
    GetItem,  // children: [object, index]
    Slice,    // children: [object, start, stop, step] (null where omitted)
    Call,     // children: [callee, args..., kwargs...]; kwNames: names of the trailing kwargs
    Filter,   // children: [input, args..., kwargs...]; name: filter; kwNames as for Call
    Test,     // children: [input, args...]; name: test; negated for "is not"
    Unary,    // children: [operand]; name: "-", "+" or "not"
    Binary,   // children: [left, right]; name: "+", "-", "*", "/", "//", "%", "**"
    Compare,  // children: [first, operand1, operand2...]; ops: "==", "<", "in", "notin", ...
    And,      // children: [left, right]
    Or,       // children: [left, right]
    CondExpr, // children: [then, condition, else (null when omitted)]
    Concat,   // children: operands of "~"
};

struct Expr {
    ExprKind kind = ExprKind::Literal;
    size_t offset = 0; // byte offset in the normalized source
    Value literal;
    std::string name;
    std::vector<std::unique_ptr<Expr>> children;
    std::vector<std::string> kwNames;
    std::vector<std::string> ops;
    bool negated = false;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

enum class StmtKind {
    Data,     // text
    Emit,     // {{ expr }}
    If,       // conditions[i] guards bodies[i]; elseBody
    For,      // targets in expr [if filter]: body [else elseBody]
    Set,      // targets = expr, or nsName.nsAttr = expr
    SetBlock, // {% set target %}body{% endset %}
    Break,
    Continue,
    Scoped, // {% generation %}body{% endgeneration %} (transformers' AssistantTracker): body in
            // its own scope, rendered as is
};

struct Stmt {
    StmtKind kind = StmtKind::Data;
    size_t offset = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr filter;
    std::vector<ExprPtr> conditions;
    std::vector<Body> bodies;
    Body body;
    Body elseBody;
    std::vector<std::string> targets;
    std::string nsAttr; // non-empty: assignment to attribute nsAttr of namespace targets[0]
};

} // namespace coli::jinja
