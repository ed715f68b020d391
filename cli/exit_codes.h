#pragma once
// Exit codes of `coli` (documented in docs/cli.md and in --help). Scripts rely on them: keep them.
namespace coli::cli {

enum ExitCode : int {
    kExitOk = 0,
    kExitInternal = 1,      // a bug: an unexpected exception or broken invariant
    kExitUsage = 2,         // bad flags, missing arguments, out-of-range sampling parameter
    kExitModel = 3,         // the model directory cannot be loaded (missing or malformed file)
    kExitGeneration = 4,    // generation failed (NaN/Inf logits, context length exceeded)
    kExitInterrupted = 130, // SIGINT (Ctrl+C) in `generate`, or while loading; 128 + SIGINT
};

// Shown at the end of every --help.
inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok, 1 internal error, 2 usage error, 3 model error (cannot load), "
    "4 generation error (numeric, context), 130 interrupted.";

} // namespace coli::cli
