#include "chat/jinja_budget.h"

#include "chat/jinja_value.h"

#include <algorithm>

namespace coli::jinja {

namespace {

thread_local BudgetScope* t_current = nullptr;

// "64 MiB" for whole mebibytes (the defaults), else the exact byte count.
std::string bytesText(size_t n) {
    if (n % (size_t(1) << 20) == 0) return std::to_string(n >> 20) + " MiB";
    return std::to_string(n) + " bytes";
}

[[noreturn]] void overBytes(const BudgetScope& b) {
    fail(ErrorCode::InvalidArgument,
         "the template exceeds the rendering memory budget: the values it holds would take "
         "more than " +
             bytesText(b.limits.maxBytes) +
             " (strings, list items, dict entries and the output so far count)");
}

} // namespace

BudgetScope::BudgetScope(const RenderLimits& l, const std::atomic<bool>* c, RenderUsage* usage)
    : limits(l), cancel(c), m_report(usage), m_previous(t_current) {
    t_current = this;
}

BudgetScope::~BudgetScope() {
    t_current = m_previous;
    if (m_report) *m_report = used;
}

size_t chargeBytes(size_t n) {
    BudgetScope* b = t_current;
    if (!b) return 0;
    if (n > b->limits.maxBytes - b->used.bytes) overBytes(*b);
    chargeOps(n / 1024);
    b->used.bytes += n;
    b->used.peakBytes = std::max(b->used.peakBytes, b->used.bytes);
    return n;
}

void refundBytes(size_t n) {
    BudgetScope* b = t_current;
    if (b) b->used.bytes -= std::min(n, b->used.bytes);
}

void checkBytes(size_t n) {
    const BudgetScope* b = t_current;
    if (b && n > b->limits.maxBytes - b->used.bytes) overBytes(*b);
}

void chargeOps(uint64_t n) {
    BudgetScope* b = t_current;
    if (!b) return;
    if (b->cancel && b->cancel->load(std::memory_order_relaxed))
        fail(ErrorCode::Cancelled, "rendering cancelled");
    if (n > b->limits.maxOperations - b->used.operations)
        fail(ErrorCode::InvalidArgument,
             "the template exceeds the rendering operation budget of " +
                 std::to_string(b->limits.maxOperations) +
                 " operations (statements, expressions, loop iterations; does it loop without "
                 "end?)");
    b->used.operations += n;
}

} // namespace coli::jinja
