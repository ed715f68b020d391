#include "options.h"

#include "exit_codes.h"
#include "signals.h"

#include "core/number_text.h"
#include "mirror/mirror_load.h"
#include "runtime/expert_budget.h"
#include "tiers/expert_cache.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <unistd.h>

namespace coli::cli {

void addModelOptions(CLI::App& cmd, ModelOptions& o) {
    cmd.add_option("MODEL_DIR", o.dir, "Hugging Face checkpoint directory (config.json, ...)")
        ->type_name("")
        ->required();
    cmd.add_option("-t,--threads", o.threads, "CPU threads for the forward pass (0 = all cores)")
        ->type_name("N")
        ->check(integerIn(0, 4096));
}

std::string parseQuantise(const std::string& text, WeightQuantisation* out) {
    WeightQuantisation q;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, end - start);
        start = end + 1;
        const size_t eq = item.find('=');
        if (eq == std::string::npos)
            return fmt::format("'{}' is not CLASS=FORMAT (e.g. experts=int4-g64)", item);
        const std::string cls = item.substr(0, eq);
        std::string fmtName = item.substr(eq + 1);
        if (fmtName == "int8") fmtName = "int8-g64"; // as `coli convert --experts int8`
        quant::WeightFormat f;
        if (!quant::parseWeightFormat(fmtName.c_str(), &f))
            return fmt::format("unknown format '{}' (int4-g64, int4-g32, int8-g64, int8-g32)",
                               item.substr(eq + 1));
        std::optional<quant::WeightFormat>* slot = cls == "experts"   ? &q.experts
                                                   : cls == "dense"   ? &q.dense
                                                   : cls == "embed"   ? &q.embed
                                                   : cls == "lm_head" ? &q.lmHead
                                                                      : nullptr;
        if (!slot) return fmt::format("unknown class '{}' (experts, dense, embed, lm_head)", cls);
        if (*slot) return fmt::format("class '{}' given twice", cls);
        *slot = f;
    }
    *out = q;
    return {};
}

aio::DirectIo directIoMode(bool directIo, bool buffered) {
    return directIo ? aio::DirectIo::On : buffered ? aio::DirectIo::Off : aio::DirectIo::Auto;
}

std::string parseDiskWeights(const std::string& text, double* primary, double* mirror) {
    const size_t comma = text.find(',');
    if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos)
        return fmt::format("'{}' is not A,B (the primary's and the mirror's weights, e.g. 3,1)",
                           text);
    double a = 0, b = 0;
    const double inf = std::numeric_limits<double>::infinity();
    if (std::string e = parseDecimal(text.substr(0, comma), 0, inf, &a); !e.empty()) return e;
    if (std::string e = parseDecimal(text.substr(comma + 1), 0, inf, &b); !e.empty()) return e;
    if (std::string e = mirror::checkDiskWeights(a, b); !e.empty()) return e;
    *primary = a;
    *mirror = b;
    return {};
}

void addQuantiseOption(CLI::App& cmd, ModelOptions& o) {
    cmd.add_option("--quantise", o.quantise,
                   "Quantise a Hugging Face checkpoint in memory: CLASS=FORMAT,... with classes "
                   "experts, dense, embed, lm_head and formats int4-g64, int4-g32, int8-g64 "
                   "(int8), int8-g32 (a colibri container is quantised already)")
        ->type_name("CLASS=FORMAT,...")
        ->check(CLI::Validator(
            [](std::string& s) {
                WeightQuantisation q;
                return parseQuantise(s, &q);
            },
            "CLASS=FORMAT,..."));
}

void addPlacementOptions(CLI::App& cmd, ModelOptions& o) {
    o.placement = true;
    CLI::Option* budget =
        cmd.add_option("--ram-budget", o.ramBudget,
                       "RAM for routed experts, reads in flight included (e.g. 2GiB, 512MiB; 0 = "
                       "only the working set; default: MemAvailable minus a safety margin)")
            ->type_name("SIZE")
            ->transform(byteSize());
    cmd.add_flag("--resident", o.resident,
                 "Read every expert at load and keep it in RAM (no streaming)")
        ->excludes(budget);
    CLI::Option* direct = cmd.add_flag(
        "--direct-io", o.directIo,
        "Read experts with O_DIRECT; a file whose file system refuses it is an error (default: "
        "O_DIRECT where the file system allows it, else buffered with a note)");
    cmd.add_flag("--buffered", o.buffered,
                 "Read experts through the page cache (dropped after each read), never O_DIRECT")
        ->excludes(direct);
    cmd.add_flag("--no-prefetch", o.noPrefetch, "Turn off the router-lookahead prefetch");
    cmd.add_option("--gpu", o.gpu,
                   "The VRAM tier: compute quantised experts on this Vulkan device (a part of its "
                   "name, as `coli info` lists them), auto (a discrete, else an integrated GPU) or "
                   "none (default)")
        ->type_name("NAME|auto|none")
        ->check(nonEmptyPath("use --gpu none for no GPU"));
    cmd.add_option("--vram-budget", o.vramBudget,
                   "VRAM for experts with --gpu (e.g. 4GiB; default: 80 % of the device's memory)")
        ->type_name("SIZE")
        ->transform(byteSize());
    cmd.add_option("--io-depth", o.ioDepth, "Expert reads in flight (1..64)")
        ->type_name("N")
        ->check(integerIn(1, 64));
    cmd.add_option("--io-backend", o.ioBackend, "Expert read backend: auto, io_uring, pread")
        ->type_name("NAME")
        ->check(CLI::IsMember({"auto", "io_uring", "pread"}));
    cmd.add_flag("--no-learn", o.noLearn,
                 "Neither load nor save expert usage (heat, pins) in the usage database");
    cmd.add_option("--usage-db", o.usageDb,
                   "Usage database file (default: $XDG_DATA_HOME/colibri/colibri.db)")
        ->type_name("PATH")
        ->check(nonEmptyPath("leave the option out for the default database"));
    CLI::Option* mirror =
        cmd.add_option("--mirror", o.mirror,
                       "A mirror of model files on a second disk (coli mirror stage): expert "
                       "reads are split between the two disks")
            ->type_name("DIR")
            ->check(nonEmptyPath());
    cmd.add_option("--disk-weights", o.diskWeights,
                   "Read weights of the model's disk and the mirror's, e.g. 3,1 (default: "
                   "measured at load)")
        ->type_name("A,B")
        ->needs(mirror)
        ->check(CLI::Validator(
            [](std::string& s) {
                double a = 0, b = 0;
                return parseDiskWeights(s, &a, &b);
            },
            ""));
}

CLI::Validator integerIn(int64_t lo, int64_t hi) {
    return CLI::Validator(
        [lo, hi](std::string& s) {
            int64_t v = 0;
            return parseInteger(s, lo, hi, &v);
        },
        "");
}

CLI::Validator unsignedIn(uint64_t lo, uint64_t hi) {
    return CLI::Validator(
        [lo, hi](std::string& s) {
            uint64_t v = 0;
            return parseUnsigned(s, lo, hi, &v);
        },
        "");
}

CLI::Validator numberIn(double lo, double hi) {
    return CLI::Validator(
        [lo, hi](std::string& s) {
            double v = 0;
            return parseDecimal(s, lo, hi, &v);
        },
        "");
}

const CLI::Validator& numberText() {
    static const CLI::Validator v =
        numberIn(-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
    return v;
}

CLI::Validator nonEmptyPath(const std::string& hint) {
    return CLI::Validator(
        [hint](std::string& s) {
            if (!s.empty()) return std::string();
            return "the path is empty" + (hint.empty() ? std::string() : " (" + hint + ")");
        },
        "");
}

CLI::Validator byteSize() {
    CLI::Validator v(
        [](std::string& s) {
            uint64_t bytes = 0;
            std::string e = parseByteSize(s, &bytes);
            if (e.empty()) s = std::to_string(bytes);
            return e;
        },
        "");
    v.non_modifying(false);
    return v;
}

namespace {

// CLI11's option text without its validator descriptions: " N", " PATH ... REQUIRED".
class ReadableHelp : public CLI::Formatter {
public:
    std::string make_option_opts(const CLI::Option* opt) const override {
        if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
        std::string out;
        if (opt->get_type_size() != 0) {
            const std::string type = opt->get_type_name();
            const std::string name = type.substr(0, type.find(':'));
            if (!name.empty()) out += " " + name;
            // Repeatable: "TEXT ..."; a comma list names itself ("BUDGET,...").
            if (opt->get_expected_max() == CLI::detail::expected_max_vector_size &&
                opt->get_delimiter() == '\0')
                out += " ...";
            if (opt->get_required()) out += " (required)";
        }
        for (const CLI::Option* other : opt->get_excludes())
            out += " (not with " + other->get_name() + ")";
        return out;
    }
};

} // namespace

void useReadableHelp(CLI::App& app) {
    app.formatter(std::make_shared<ReadableHelp>());
}

void addSamplingOptions(CLI::App& cmd, SamplingOptions& o) {
    cmd.add_option("--temp", o.temperature, "Temperature, 0..100 (0 = greedy)")
        ->type_name("T")
        ->check(numberText());
    cmd.add_option("--top-k", o.topK, "Keep the K most likely tokens (0 = off)")
        ->type_name("K")
        ->check(integerIn(0, std::numeric_limits<int>::max()));
    cmd.add_option("--top-p", o.topP, "Nucleus sampling, (0, 1] (1 = off)")
        ->type_name("P")
        ->check(numberText());
    cmd.add_option("--min-p", o.minP, "Drop tokens below P x the top probability, [0, 1)")
        ->type_name("P")
        ->check(numberText());
    cmd.add_option("--repeat-penalty", o.repeatPenalty, "Repetition penalty, (0, 10] (1 = off)")
        ->type_name("R")
        ->check(numberText());
    cmd.add_option("--repeat-last-n", o.repeatLastN, "Tokens of history the penalty looks at")
        ->type_name("N")
        ->check(integerIn(0, std::numeric_limits<int>::max()));
    cmd.add_option("-s,--seed", o.seed, "Random seed, >= 0 (default: random, printed on stderr)")
        ->type_name("S")
        ->check(unsignedIn(0, std::numeric_limits<uint64_t>::max()));
}

std::string withFlagNames(std::string msg) {
    // The sampler names its fields (validate()); the user typed flags.
    static const std::pair<const char*, const char*> kNames[] = {
        {"temperature", "--temp"},
        {"topK", "--top-k"},
        {"topP", "--top-p"},
        {"minP", "--min-p"},
        {"repeatPenalty", "--repeat-penalty"},
        {"repeatLastN", "--repeat-last-n"},
    };
    for (auto [field, flag] : kNames)
        if (msg.starts_with(std::string(field) + " ")) return flag + msg.substr(strlen(field));
    return msg;
}

std::string checkSamplingFlags(const SamplingOptions& o) {
    // Each flag alone on top of valid defaults, so the message names the flag the user typed.
    auto check = [](const char* /*flag: named by withFlagNames*/, auto set) -> std::string {
        SamplerParams p;
        set(p);
        Status s = validate(p);
        return s ? std::string() : withFlagNames(s.message());
    };
    std::string e;
    if (o.temperature &&
        (e = check("--temp", [&](auto& p) { p.temperature = *o.temperature; })) != "")
        return e;
    if (o.topK && (e = check("--top-k", [&](auto& p) { p.topK = *o.topK; })) != "") return e;
    if (o.topP && (e = check("--top-p", [&](auto& p) { p.topP = *o.topP; })) != "") return e;
    if (o.minP && (e = check("--min-p", [&](auto& p) { p.minP = *o.minP; })) != "") return e;
    if (o.repeatPenalty &&
        (e = check("--repeat-penalty", [&](auto& p) { p.repeatPenalty = *o.repeatPenalty; })) != "")
        return e;
    if (o.repeatLastN &&
        (e = check("--repeat-last-n", [&](auto& p) { p.repeatLastN = *o.repeatLastN; })) != "")
        return e;
    return {};
}

std::optional<GenerateParams> makeGenerateParams(const SamplingOptions& sampling,
                                                 const GenerationConfig& gc, int maxNewTokens,
                                                 bool ignoreEos,
                                                 std::vector<std::string> stopStrings) {
    GenerateParams params;
    params.maxNewTokens = maxNewTokens;
    params.sampler = resolveSampling(sampling, gc);
    if (!sampling.seed) {
        std::random_device rd;
        params.sampler.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    }
    params.stopStrings = std::move(stopStrings);
    params.ignoreEos = ignoreEos;
    if (Status s = validate(params); !s) { // model defaults combined with flags
        printError(withFlagNames(s.message()));
        return std::nullopt;
    }
    return params;
}

std::string describeSampling(const SamplerParams& p) {
    return fmt::format("temp {:.2f}, top-k {}, top-p {:.2f}, min-p {:.2f}, repeat-penalty {:.2f} "
                       "(last {}), seed {}",
                       p.temperature, p.topK, p.topP, p.minP, p.repeatPenalty, p.repeatLastN,
                       p.seed);
}

int writeJsonOption(const std::string& path, const nlohmann::json& j) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!out.flush()) {
        printError(fmt::format("--json {}: cannot write", path));
        return kExitUsage;
    }
    return kExitOk;
}

void printError(const std::string& msg) {
    std::fflush(stdout);
    fmt::print(stderr, "coli: error: {}\n", msg);
}

void printWarning(const std::string& msg) {
    std::fflush(stdout);
    fmt::print(stderr, "coli: warning: {}\n", msg);
}

std::unique_ptr<LoadedModel> loadModel(const ModelOptions& o, int& exitCode) {
    const bool tty = isatty(STDERR_FILENO);
    int lastPercent = -1;
    ProgressFn progress;
    if (tty) {
        progress = [&](const LoadProgress& p) {
            const int percent = static_cast<int>(p.fraction * 100);
            if (percent == lastPercent) return;
            lastPercent = percent;
            fmt::print(stderr, "\rloading {:<14} {:3d}%", p.stage, percent);
            std::fflush(stderr);
        };
    }
    ModelLoadOptions opt;
    opt.threads = o.threads;
    if (!o.quantise.empty()) (void)parseQuantise(o.quantise, &opt.quantisation); // checked
    // In-memory expert quantisation needs the experts resident (a checkpoint streams them as
    // stored); an explicit --ram-budget then reports the conflict instead.
    opt.tiers.stream = o.placement && !o.resident && !(opt.quantisation.experts && !o.ramBudget);
    opt.tiers.directIo = directIoMode(o.directIo, o.buffered);
    opt.tiers.prefetch = !o.noPrefetch;
    opt.tiers.ioQueueDepth = o.ioDepth;
    opt.tiers.ioBackend = o.ioBackend == "io_uring" ? aio::IoBackend::Uring
                          : o.ioBackend == "pread"  ? aio::IoBackend::PreadThreads
                                                    : aio::IoBackend::Auto;
    opt.tiers.mirrorDir = o.mirror;
    opt.tiers.gpu = o.gpu;
    opt.tiers.vramBudgetBytes = o.vramBudget.value_or(0);
    if (!o.diskWeights.empty()) {
        double a = 0, b = 0;
        (void)parseDiskWeights(o.diskWeights, &a, &b); // checked by the option
        opt.tiers.diskWeights = std::make_pair(a, b);
    }
    auto lm = LoadedModel::load(o.dir, opt, progress, &interruptFlag());
    if (tty) fmt::print(stderr, "\r{:<30}\r", "");
    if (!lm) {
        if (lm.status().code() == ErrorCode::Cancelled) {
            exitCode = kExitInterrupted;
            fmt::print(stderr, "coli: interrupted while loading {}\n", o.dir);
        } else {
            exitCode = kExitModel;
            printError(fmt::format("cannot load model {}: {}", o.dir, lm.status().message()));
        }
        return nullptr;
    }
    for (const std::string& w : lm.value()->warnings())
        printWarning(w);
    if (const std::string gpu = lm.value()->model().gpuNote(); !gpu.empty())
        fmt::print(stderr, "{}\n", gpu);
    if (tiers::ExpertCache* cache = lm.value()->model().expertCache()) {
        uint64_t budget = 0;
        std::string note; // " (memory cgroup limit ...)" when the cgroup decided the budget
        if (o.ramBudget) {
            budget = *o.ramBudget;
        } else {
            Result<AvailableMemory> avail = availableMemory();
            if (!avail)
                printWarning(avail.status().message() + "; using the minimum budget");
            else if (!avail->warning.empty())
                printWarning(avail->warning);
            budget = avail ? defaultExpertBudget(*cache, *avail, &note) : 0;
        }
        if (Status st = cache->setBudget(budget); !st.isOk()) {
            printError("--ram-budget: " + st.message());
            exitCode = kExitUsage;
            return nullptr;
        }
        fmt::print(stderr, "{}\n", describeTiers(*cache, note));
    } else if (o.placement) {
        fmt::print(stderr, "experts: resident (every expert read at load{})\n",
                   o.resident ? "" : ": --quantise experts=... needs them in RAM");
    }
    exitCode = kExitOk;
    return std::move(lm.value());
}

} // namespace coli::cli
