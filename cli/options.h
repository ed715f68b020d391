#pragma once
// Options shared by `generate` and `chat`: the model directory, threads and sampling.
#include "model/quantise_weights.h"
#include "runtime/sampling_defaults.h"
#include "runtime/session.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coli::cli {

struct ModelOptions {
    std::string dir;
    int threads = 0;      // 0 = all cores
    std::string quantise; // --quantise (addQuantiseOption); "" = keep the checkpoint's f32
    // Expert placement (addPlacementOptions; docs/cli.md "Expert placement").
    bool placement = false;             // the command registered the placement flags
    std::optional<uint64_t> ramBudget;  // --ram-budget in bytes; unset = from MemAvailable
    bool resident = false;              // --resident: every expert read at load, no streaming
    bool directIo = false;              // --direct-io (refuse a file without O_DIRECT)
    bool buffered = false;              // --buffered (never O_DIRECT)
    bool noPrefetch = false;            // --no-prefetch
    int ioDepth = 4;                    // --io-depth
    std::string ioBackend = "auto";     // --io-backend auto|io_uring|pread
    bool noLearn = false;               // --no-learn: no usage database (heat, pins)
    std::string usageDb;                // --usage-db PATH (default: the XDG location)
    std::string mirror;                 // --mirror DIR: a mirror of model files on a second disk
    std::string diskWeights;            // --disk-weights A,B (primary, mirror); "" = measured
    std::string gpu = "none";           // --gpu NAME|auto|none: the VRAM tier (docs/gpu.md)
    std::optional<uint64_t> vramBudget; // --vram-budget in bytes; unset = 80 % of the device's
};

// Sampling flags; a flag left out takes the model's generation_config.json default, or
// SamplerParams' (temp 0.8, top-k 40, top-p 0.95, min-p 0.05, repeat penalty 1.0 (off) over the
// last 64 tokens) when the file has none. No --seed: a random seed, reported on stderr.
using SamplingOptions = SamplingOverrides;

void addModelOptions(CLI::App& cmd, ModelOptions& o);
// --quantise CLASS=FORMAT[,...]: in-memory quantisation of a Hugging Face checkpoint
// (ModelLoadOptions::quantisation); classes experts, dense, embed, lm_head; formats int4-g64,
// int4-g32, int8-g64 (or int8), int8-g32. The same choices as `coli convert` give the same
// weights as its container. Model::load refuses it for a container (exit 3, kExitModel).
void addQuantiseOption(CLI::App& cmd, ModelOptions& o);
// --ram-budget SIZE, --resident, --direct-io, --buffered, --no-prefetch, --io-depth N, --io-backend
// NAME,
// --mirror DIR, --disk-weights A,B, --gpu NAME|auto|none, --vram-budget SIZE. Without --resident
// the routed experts stream from disk through the expert cache.
void addPlacementOptions(CLI::App& cmd, ModelOptions& o);
// Parses a --disk-weights value "A,B" into *primary and *mirror; returns "" or what is wrong.
// The expert read mode of --direct-io / --buffered / neither (aio::DirectIo On / Off / Auto).
aio::DirectIo directIoMode(bool directIo, bool buffered);
std::string parseDiskWeights(const std::string& text, double* primary, double* mirror);
// Parses a --quantise value into *out; returns "" or what is wrong ("unknown class 'x'", ...).
std::string parseQuantise(const std::string& text, WeightQuantisation* out);

// Check an option's text before CLI11 converts it (core/number_text.h), so that a bad value gets
// a plain message naming the flag and is never wrapped or saturated by the conversion:
// "--max-tokens: 'abc' is not an integer", "--seed: 18446744073709551616 is out of range (0 to
// 18446744073709551615)". Use one per numeric option, with the range its type can hold at most.
// They have no description, so --help shows only the option's value name.
CLI::Validator integerIn(int64_t lo, int64_t hi);
CLI::Validator unsignedIn(uint64_t lo, uint64_t hi);
CLI::Validator numberIn(double lo, double hi); // a finite decimal number in [lo, hi]
const CLI::Validator& numberText();            // any finite decimal number (checked later)
// Refuses an empty path ("--usage-db: the path is empty"), which would otherwise read as the
// option left out; hint (may be "") follows in parentheses, e.g. "leave the option out for the
// default database".
CLI::Validator nonEmptyPath(const std::string& hint = "");
// A transform: a byte count with an optional unit (parseByteSize: 2GiB, 512MiB, 1500000) -> the
// number of bytes as digits, for an integer option.
CLI::Validator byteSize();

// --help for people: an option shows its value name (set with ->type_name("N"), "PATH", ...)
// and nothing of CLI11's annotations (validator descriptions such as "in [0 - 4096]").
// Call on the root App before adding subcommands (they copy its formatter).
void useReadableHelp(CLI::App& app);
void addSamplingOptions(CLI::App& cmd, SamplingOptions& o);

// The sampler's messages name its fields ("topP must be in (0, 1] (got 2)"); this names the flag
// instead ("--top-p must be in (0, 1] (got 2)"). Other messages are returned unchanged.
std::string withFlagNames(std::string msg);

// Checks each given flag against the sampler's ranges before any model is loaded.
// Returns "" when fine, else a message naming the flag and the allowed range.
std::string checkSamplingFlags(const SamplingOptions& o);

// The GenerateParams of a run: the sampling flags over the model's defaults (resolveSampling;
// a random seed when --seed is absent), the token limit, --ignore-eos and the stop strings, then
// validate()d. When the combination is invalid, prints the error and returns nullopt (the caller
// exits with kExitUsage).
std::optional<GenerateParams> makeGenerateParams(const SamplingOptions& sampling,
                                                 const GenerationConfig& gc, int maxNewTokens,
                                                 bool ignoreEos,
                                                 std::vector<std::string> stopStrings = {});

// One line for stderr: "temp 0.80, top-k 40, top-p 0.95, min-p 0.05, repeat-penalty 1.00, seed 42".
std::string describeSampling(const SamplerParams& p);

// Loads the model, showing progress on stderr when it is a terminal, then prints the model's load
// warnings (LoadedModel::warnings) on stderr. On failure prints the error and sets exitCode
// (kExitModel, or kExitInterrupted when Ctrl+C cancelled the load).
std::unique_ptr<LoadedModel> loadModel(const ModelOptions& o, int& exitCode);

// Prints "coli: error: <msg>" to stderr.
void printError(const std::string& msg);
// A --json report: j (indent 1, invalid UTF-8 replaced) and a newline written to path.
// kExitOk, or kExitUsage after printing "--json PATH: cannot write".
int writeJsonOption(const std::string& path, const nlohmann::json& j);
// Prints "coli: warning: <msg>" to stderr.
void printWarning(const std::string& msg);

} // namespace coli::cli
