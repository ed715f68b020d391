#pragma once
// The resource budget of one chat-template render. A template is a program from the model's
// folder: without a budget a few lines can double a string until memory runs out or loop for
// hours. Every render runs under these limits; the defaults leave the published templates a wide
// margin (docs/chat-templates.md lists the measured figures).
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace coli {

struct RenderLimits {
    // Bytes the render's values may hold at once: every live string (its bytes + 64), list item
    // and dict entry (sizeof(Value) each, + key bytes) and the output so far. A value gives its
    // bytes back when it dies; operations that could build far more than their inputs
    // (repetition, replace, join, printing, tojson) are checked before they allocate. Exceeding
    // it is InvalidArgument, naming the template's line and the limit.
    size_t maxBytes = size_t(64) << 20;
    // Operations: one per statement executed, expression evaluated and loop iteration; one per
    // list item that a comparison, `in` or iteration walks; one per 64 bytes of text a filter,
    // test, method or operator receives; one per KiB of values built. So the time a render takes
    // is bounded too (a few seconds for the default; real templates use a thousandth of it).
    // Exceeding it is InvalidArgument.
    uint64_t maxOperations = 10'000'000;
};

// What a render used (for tests and diagnostics), in the units of RenderLimits.
struct RenderUsage {
    size_t bytes = 0;     // held at the end (the output, as values have died by then)
    size_t peakBytes = 0; // the most held at once
    uint64_t operations = 0;
};

} // namespace coli
