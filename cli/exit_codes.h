#pragma once
// Exit codes of `coli` (documented in docs/cli.md and in --help). Scripts rely on them: keep them.
namespace coli::cli {

enum ExitCode : int {
    kExitOk = 0,
    kExitInternal = 1,      // a bug: an unexpected exception or broken invariant
    kExitUsage = 2,         // bad flags, missing arguments, out-of-range sampling parameter
    kExitModel = 3,         // the model directory cannot be loaded (missing or malformed file)
    kExitGeneration = 4,    // generation failed (NaN/Inf logits, context length exceeded)
    kExitNoSpace = 5,       // the disk filled up (download, mirror staging): what was written is
                            // kept, and the same command resumes once space is freed
    kExitNetwork = 6,       // a download or Hub request failed (network, server, authorisation,
                            // a file whose hash does not match): nothing wrong is installed
    kExitNotReady = 7,      // `coli doctor`: the model is not ready (each finding says what to do);
                            // `coli mirror verify`: the mirror does not match its receipt
    kExitInterrupted = 130, // SIGINT (Ctrl+C) in `generate`, or while loading; 128 + SIGINT
};

// Shown at the end of every --help.
inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok, 1 internal error, 2 usage error, 3 model error (cannot load), "
    "4 generation error (numeric, context), 5 disk full (resumable), 6 network or Hub error, "
    "7 model not ready (doctor), 130 interrupted.";

} // namespace coli::cli
