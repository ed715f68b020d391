#pragma once
// Charging the budget (chat/render_budget.h) of the render running on this thread. Values are
// built deep inside the built-ins (filters, methods, operators), so the budget is found through a
// thread-local pointer that a BudgetScope installs for the duration of one render instead of
// being threaded through every function and closure. Outside a BudgetScope (parsing, building the
// input variables, unit tests of single built-ins) charging does nothing.
// All charging functions throw JinjaError (InvalidArgument when over a limit, Cancelled when the
// cancel flag is set) without position; the evaluator adds the position.
// Thread-safety: each thread sees only its own scope.
#include "chat/render_budget.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace coli::jinja {

class BudgetScope {
public:
    // cancel: polled at every operation charged; may be null. usage: receives what was used when
    // the scope ends (also when the render failed); may be null.
    BudgetScope(const RenderLimits& limits, const std::atomic<bool>* cancel, RenderUsage* usage);
    ~BudgetScope();
    BudgetScope(const BudgetScope&) = delete;
    BudgetScope& operator=(const BudgetScope&) = delete;

    RenderLimits limits;
    const std::atomic<bool>* cancel;
    RenderUsage used;

private:
    RenderUsage* m_report;
    BudgetScope* m_previous;
};

// A value of n bytes is built: adds n to the bytes held (and n / 1024 operations: building it
// takes that long). Returns what was charged (0 outside a BudgetScope); the value gives exactly
// that back with refundBytes when it dies.
size_t chargeBytes(size_t n);
void refundBytes(size_t n);
// Before building a value of `n` bytes: fails if it would not fit the bytes left, without
// charging (the value charges itself when built). Used where one operation can produce far more
// than its inputs (repetition, replace, join, repr, tojson), so that nothing large is allocated
// first.
void checkBytes(size_t n);
// Operations (see RenderLimits::maxOperations); also polls the cancel flag.
void chargeOps(uint64_t n = 1);
// One operation per 64 bytes of text: the cost of a built-in scanning (or decoding) `bytes` of
// text, which takes about as long as a loop iteration.
inline void chargeText(size_t bytes) {
    if (bytes >= 64) chargeOps(bytes / 64);
}

// What one string value costs: its bytes plus a fixed share for the allocation.
inline size_t stringCost(size_t bytes) {
    return bytes + 64;
}

} // namespace coli::jinja
