// coli mirror plan|stage|verify MODEL MIRROR_DIR: the hottest expert files of a model copied to a
// second disk (engine/mirror, docs/mirror.md). plan ranks the files by learned heat per byte and
// fits them into the mirror disk's free space; stage copies them crash-safely and writes the
// receipt last; verify re-hashes the copies against the receipt.
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "signals.h"

#include "mirror/expert_files.h"
#include "mirror/mirror_heat.h"
#include "mirror/mirror_plan.h"
#include "mirror/mirror_stage.h"
#include "mirror/mirror_verify.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>

namespace coli::cli {
namespace {

struct MirrorCliOptions {
    std::string model, mirrorDir;
    std::optional<double> budgetGiB, reserveGiB;
    std::string usageDb; // empty: the default database
};

std::string human(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

uint64_t gibToBytes(double gib) {
    return uint64_t(std::llround(gib * double(uint64_t(1) << 30)));
}

// The plan, or an exit code after printing why there is none.
std::optional<mirror::MirrorPlan> makePlan(const MirrorCliOptions& o, int& exitCode) {
    auto files = mirror::findExpertFiles(o.model);
    if (!files) {
        printError(fmt::format("cannot read model {}: {}", o.model, files.status().message()));
        exitCode = kExitModel;
        return std::nullopt;
    }
    mirror::ExpertHeatMap heat;
    std::string ranking;
    auto learned = mirror::loadModelHeat(o.model, o.usageDb);
    if (!learned) {
        printWarning("usage database not read: " + learned.status().message() +
                     "; ranking by expert bytes instead of learned heat");
        ranking = "expert bytes per byte (no usage history: the database could not be read)";
    } else if (!learned.value().known) {
        ranking = "expert bytes per byte (no usage history: " + learned.value().note +
                  "; chat with the model and plan again to rank by learned heat)";
    } else {
        heat = learned.value().heat;
        ranking = "learned heat per byte (" + learned.value().databasePath + ")";
    }
    mirror::MirrorPlanOptions po;
    if (o.budgetGiB) po.budgetBytes = gibToBytes(*o.budgetGiB);
    if (o.reserveGiB) po.reserveBytes = gibToBytes(*o.reserveGiB);
    auto plan = mirror::planMirrorFolder(files.value(), heat, o.mirrorDir, po);
    if (!plan) {
        printError(fmt::format("mirror {}: {}", o.mirrorDir, plan.status().message()));
        exitCode = plan.status().code() == ErrorCode::Io ? kExitModel : kExitUsage;
        return std::nullopt;
    }
    const mirror::MirrorPlan& p = plan.value();
    uint64_t expertFileBytes = 0;
    for (const auto& f : p.files)
        expertFileBytes += f.size;
    fmt::print("model:    {} ({}), {} files hold routed experts ({})\n", o.model,
               files.value().container ? "colibri container" : "Hugging Face checkpoint",
               p.files.size(), human(double(expertFileBytes)));
    fmt::print("mirror:   {}: {} free of {}, reserve {}{}\n", o.mirrorDir,
               human(double(p.space.freeBytes)), human(double(p.space.totalBytes)),
               human(double(p.reserveBytes)), o.reserveGiB ? "" : " (max(1 GiB, 5 %))");
    fmt::print("room:     {}{}\n", human(double(p.usableBytes)),
               p.budgetBytes ? ", budget " + human(double(*p.budgetBytes)) : std::string());
    fmt::print("ranking:  {}\n", ranking);
    if (mirror::sameFileSystem(o.model, o.mirrorDir))
        printWarning(o.mirrorDir + " is on the same file system as the model: a mirror there "
                                   "adds no read bandwidth (pick a folder on another disk)");
    fmt::print("\n  {:>3}  {:<40} {:>10} {:>8} {:>7}  {}\n", "#", "file", "size", "experts",
               p.byHeat ? "heat" : "bytes", "plan");
    int rank = 0;
    for (const auto& f : p.files) {
        const double share =
            p.heatTotal > 0 ? (p.byHeat ? f.heat : double(f.expertBytes)) / p.heatTotal : 0;
        fmt::print("  {:>3}  {:<40} {:>10} {:>8} {:>6.1f}%  {}{}\n", ++rank, f.path,
                   human(double(f.size)), f.experts, 100 * share, mirror::fileChoiceName(f.choice),
                   f.note.empty() ? "" : " (" + f.note + ")");
    }
    const auto staged = p.stagePaths();
    fmt::print(
        "\nplan:     {} file{}, {} in the mirror ({} to copy), covering {:.1f} % of the {}\n",
        staged.size(), staged.size() == 1 ? "" : "s", human(double(p.mirrorBytes)),
        human(double(p.copyBytes)), 100 * p.coveredShare(),
        p.byHeat ? "learned heat" : "expert bytes");
    if (p.budgetBytes && p.mirrorBytes > *p.budgetBytes)
        printWarning("the mirror already holds " + human(double(p.mirrorBytes)) +
                     ", more than the budget: staging never deletes a mirror file (remove "
                     "files by hand to shrink it)");
    return plan.value();
}

int runPlan(const MirrorCliOptions& o) {
    int code = kExitOk;
    auto plan = makePlan(o, code);
    return plan ? kExitOk : code;
}

int runStage(const MirrorCliOptions& o) {
    int code = kExitOk;
    auto plan = makePlan(o, code);
    if (!plan) return code;
    std::fflush(stdout);

    // Progress: one rewritten line on a terminal, at most 5 per second.
    const bool tty = isatty(STDERR_FILENO);
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    bool shown = false;
    mirror::StageOptions so;
    if (tty) {
        so.progress = [&](const mirror::StageProgress& p) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(200)) return;
            last = now;
            shown = true;
            const double rate = p.seconds > 0 ? double(p.workDone) / p.seconds : 0;
            const double pct = p.workTotal ? 100.0 * double(p.workDone) / double(p.workTotal) : 0;
            fmt::print(stderr, "\r{:<9} {}/{} {:.30}  {} / {}  {:3.0f} %  {}/s   ", p.phase,
                       p.fileIndex + 1, p.fileCount, p.path, human(double(p.fileDone)),
                       human(double(p.fileBytes)), pct, human(rate));
            std::fflush(stderr);
        };
    }
    installSigintHandler();
    so.cancel = &interruptFlag();
    bool mirrorSide = false;
    so.mirrorSide = &mirrorSide;
    auto r = mirror::stageMirror(*plan, so);
    if (shown) fmt::print(stderr, "\r{:<90}\r", "");
    if (!r) {
        const Status& s = r.status();
        if (s.code() == ErrorCode::Cancelled) {
            std::fflush(stdout);
            fmt::print(stderr, "coli: interrupted: {}; run the same command again to resume\n",
                       s.message());
            return kExitInterrupted;
        }
        printError(fmt::format("cannot stage the mirror {}: {}", o.mirrorDir, s.message()));
        if (s.code() == ErrorCode::NoSpace) return kExitNoSpace;
        if (s.code() == ErrorCode::InvalidArgument) return kExitUsage;
        return mirrorSide ? kExitNoSpace : kExitModel;
    }
    const mirror::StageReport& rep = r.value();
    for (const std::string& t : rep.removedTemporaries)
        fmt::print("removed:  {}{} (a stale temporary copy)\n", t, mirror::kPartialSuffix);
    for (const std::string& c : rep.conflicts)
        printWarning("left out of the mirror: " + c);
    const double rate = rep.seconds > 0 ? double(rep.bytesCopied) / rep.seconds : 0;
    fmt::print("staged:   {} file{}: {} copied ({}, {}/s), {} kept from an earlier stage\n",
               rep.files.size(), rep.files.size() == 1 ? "" : "s", rep.copied,
               human(double(rep.bytesCopied)), human(rate), rep.kept);
    fmt::print("receipt:  {}\n", rep.receiptPath);
    return kExitOk;
}

int runVerify(const MirrorCliOptions& o) {
    const bool tty = isatty(STDERR_FILENO);
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    bool shown = false;
    mirror::VerifyProgressFn progress;
    if (tty) {
        progress = [&](const mirror::VerifyProgress& p) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(200)) return;
            last = now;
            shown = true;
            const double rate = p.seconds > 0 ? double(p.bytesDone) / p.seconds : 0;
            fmt::print(stderr, "\rhashing {}/{} {:.30}  {} / {}  {}/s   ", p.fileIndex + 1,
                       p.fileCount, p.path, human(double(p.bytesDone)), human(double(p.bytesTotal)),
                       human(rate));
            std::fflush(stderr);
        };
    }
    installSigintHandler();
    auto r = mirror::verifyMirror(o.model, o.mirrorDir, progress, &interruptFlag());
    if (shown) fmt::print(stderr, "\r{:<90}\r", "");
    if (!r) {
        if (r.status().code() == ErrorCode::Cancelled) {
            std::fflush(stdout);
            fmt::print(stderr, "coli: interrupted\n");
            return kExitInterrupted;
        }
        printError(
            fmt::format("mirror {} cannot be verified: {}", o.mirrorDir, r.status().message()));
        return kExitNotReady;
    }
    const mirror::VerifyReport& rep = r.value();
    for (const auto& f : rep.findings)
        fmt::print("MISMATCH  {}: {}\n", f.path, f.problem);
    fmt::print("verified: {} of {} files match the receipt ({} hashed)\n", rep.filesOk,
               rep.receipt.files.size(), human(double(rep.bytesHashed)));
    if (!rep.findings.empty()) {
        printError(fmt::format("the mirror {} does not match its receipt: {} problem{}; remove the "
                               "files named and run `coli mirror stage` again",
                               o.mirrorDir, rep.findings.size(),
                               rep.findings.size() == 1 ? "" : "s"));
        return kExitNotReady;
    }
    return kExitOk;
}

} // namespace

Command addMirrorCommand(CLI::App& root) {
    auto* app = root.add_subcommand(
        "mirror", "Copy a model's hottest expert files to a second disk (plan, stage, verify)");
    app->require_subcommand(1);
    app->footer(std::string(kExitCodesHelp) +
                " mirror stage: 5 = writing the mirror failed (disk full: what was copied is "
                "kept, the same command resumes). mirror verify: 7 = a copy differs from the "
                "receipt or the primary, or there is no valid receipt.");
    auto o = std::make_shared<MirrorCliOptions>();
    auto common = [&](CLI::App* sub, bool planning) {
        sub->add_option("MODEL", o->model, "The model folder (checkpoint or colibri container)")
            ->type_name("")
            ->required();
        sub->add_option("MIRROR_DIR", o->mirrorDir, "An existing folder on the second disk")
            ->type_name("")
            ->required();
        if (!planning) return;
        sub->add_option("--budget-gib", o->budgetGiB, "At most this many GiB in the mirror")
            ->type_name("N")
            ->check(numberIn(0, 1e9));
        sub->add_option("--reserve-gib", o->reserveGiB,
                        "GiB to leave free on the mirror's disk (default max(1 GiB, 5 %))")
            ->type_name("N")
            ->check(numberIn(0, 1e9));
        sub->add_option("--usage-db", o->usageDb,
                        "Usage database file (default: $XDG_DATA_HOME/colibri/colibri.db)")
            ->type_name("PATH")
            ->check(nonEmptyPath("leave the option out for the default database"));
    };
    auto* plan = app->add_subcommand(
        "plan", "Show which expert files fit on the mirror, hottest (learned heat per byte) first");
    common(plan, true);
    auto* stage = app->add_subcommand(
        "stage", "Copy the planned files to the mirror (resumable), then write its receipt");
    common(stage, true);
    auto* verify =
        app->add_subcommand("verify", "Re-hash every mirrored file against the mirror's receipt");
    common(verify, false);
    return {app, [o, plan, stage] {
                if (plan->parsed()) return runPlan(*o);
                if (stage->parsed()) return runStage(*o);
                return runVerify(*o);
            }};
}

} // namespace coli::cli
