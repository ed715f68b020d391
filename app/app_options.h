#pragma once
// Command line of `colibri` and the choice of the model folder at start.
// Thread-safety: plain functions and values.
#include "runtime/sampling_defaults.h"
#include "runtime/session.h"
#include "synthetic_telemetry.h"

#include <QString>
#include <QStringList>

namespace coli::app {

struct AppOptions {
    QString modelArg;            // --model DIR or the first positional argument ("" when absent)
    int threads = 0;             // --threads; 0 = defaultEngineThreads()
    GenerateParams params;       // maxNewTokens; params.sampler unused (see `sampling`)
    bool maxTokensGiven = false; // -n was given (else the Settings view's value applies)
    SamplingOverrides sampling;
    // --synthetic-telemetry LxE: the Brain view shows a synthetic model's telemetry.
    std::optional<SyntheticOptions> synthetic;
    bool showHelp = false, showVersion = false;
    QString helpText;
    QString error; // a usage error (exit code kExitUsage)
};

inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoDisplay = 3;
inline constexpr int kExitQml = 4;

// Parses argv (no QCoreApplication needed). Sampling flags left out take the model's
// generation_config.json defaults, else temperature 0.8, top-k 40, top-p 0.95, min-p 0.05 (as
// `coli generate`); the seed is fixed (0 unless --seed), so the same conversation gives the same
// answers on every run; up to 512 new tokens per answer.
AppOptions parseAppOptions(const QStringList& args);

// Forward-pass threads when the user gives none: all cores but one, at least one. The GUI thread
// and the scene-graph renderer (llvmpipe, under Xvfb, renders on the CPU too) keep a core;
// OpenMP threads spinning on every core were measured to delay the first token by seconds here.
int defaultEngineThreads();

// The model folder to open: the command line's, else the remembered one (QSettings
// "model/lastDir") when that folder still exists, else the compiled-in default. When a remembered
// folder is skipped because it no longer exists, *notice (if given) gets a sentence saying so,
// for the window; otherwise *notice is left alone. Reads the file system (one stat).
QString chooseModelDir(const QString& commandLine, const QString& remembered,
                       const QString& compiledDefault, QString* notice = nullptr);

// The default model folder: the installed copy of the shipped model,
// `appDir/../share/colibri/models/<shippedName>`, when it holds a config.json (an installed
// colibri), else `compiledDefault` (the source tree's resources/models/<name> for a build-tree
// binary, or the folder set with -DCOLI_DEFAULT_MODEL_DIR). Reads the file system (one stat).
QString defaultModelDir(const QString& appDir, const QString& shippedName,
                        const QString& compiledDefault);

// True when a windowing system can be reached: DISPLAY or WAYLAND_DISPLAY set, or the user chose
// a platform plugin with QT_QPA_PLATFORM (e.g. offscreen). Reads the environment only.
bool displayAvailable();
// The message printed when displayAvailable() is false.
const char* noDisplayMessage();

} // namespace coli::app
