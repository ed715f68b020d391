// coli doctor MODEL [--deep]: is a model folder ready to run, and if not, what to do
// (engine/doctor/doctor.h; docs/cli.md, "coli doctor"). Exit 0 ready, 7 not ready.
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "signals.h"

#include "core/strings.h"
#include "doctor/doctor.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <unistd.h>

namespace coli::cli {
namespace {

struct DoctorCliOptions {
    std::string dir;
    bool deep = false;
    bool noBandwidth = false;
    bool requireChat = false;
    bool json = false;
};

std::string mb(double bytes) {
    return fmt::format("{:.1f} MB", bytes / 1e6);
}

std::string plural(size_t n, const char* one) {
    return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s");
}

std::string bandwidthLine(const doctor::DoctorReport& r, const DoctorCliOptions& o) {
    if (o.noBandwidth) return "not measured (--no-bandwidth)";
    if (!r.bandwidth) return "not measured (see the findings)";
    const auto& b = *r.bandwidth;
    return fmt::format("{:.2f} GB/s read ({}, {} in {:.2f} s{})", b.bytesPerSecond / 1e9,
                       b.directIo ? "O_DIRECT" : "buffered: the page cache's rate",
                       mibString(b.bytes), b.seconds,
                       b.directIo ? "" : ", O_DIRECT refused by the file system");
}

void printText(const doctor::DoctorReport& r, const DoctorCliOptions& o) {
    using doctor::Severity;
    fmt::print("model:    {}\n", r.dir);
    fmt::print("kind:     {}{}\n", doctor::modelKindName(r.kind),
               r.architecture.empty() ? "" : " (" + r.architecture + ")");
    std::string checked =
        fmt::format("{} of {} whole", r.filesChecked, plural(size_t(r.weightFiles), "weight file"));
    if (o.deep)
        checked += fmt::format(", {} hashed ({})", plural(size_t(r.filesHashed), "file"),
                               mb(double(r.bytesHashed)));
    checked += r.chatTemplate ? ", chat template loads" : ", no usable chat template";
    fmt::print("checked:  {}\n", checked);
    fmt::print("disk:     {}\n", bandwidthLine(r, o));
    for (const doctor::Finding& f : r.findings) {
        fmt::print("{:<9} {}{}\n", doctor::severityName(f.severity),
                   f.file.empty() ? "" : f.file + ": ", f.problem);
        fmt::print("          what to do: {}\n", f.action);
    }
    const size_t errors = r.count(Severity::Error), warnings = r.count(Severity::Warning);
    std::string tally = plural(errors, "error") + ", " + plural(warnings, "warning");
    fmt::print("result:   {} ({})\n", r.ready ? "ready" : "NOT READY", tally);
}

// For scripts: a word that will not change with the wording of the text report.
const char* kindToken(doctor::ModelKind k) {
    switch (k) {
    case doctor::ModelKind::Checkpoint:
        return "checkpoint";
    case doctor::ModelKind::Container:
        return "container";
    case doctor::ModelKind::Unknown:
        break;
    }
    return "none";
}

void printJson(const doctor::DoctorReport& r) {
    nlohmann::ordered_json findings = nlohmann::ordered_json::array();
    for (const doctor::Finding& f : r.findings)
        findings.push_back({{"severity", doctor::severityName(f.severity)},
                            {"file", f.file},
                            {"problem", f.problem},
                            {"action", f.action}});
    nlohmann::ordered_json bw = nullptr;
    if (r.bandwidth)
        bw = {{"bytes_per_second", r.bandwidth->bytesPerSecond},
              {"direct_io", r.bandwidth->directIo},
              {"bytes", r.bandwidth->bytes},
              {"seconds", r.bandwidth->seconds}};
    nlohmann::ordered_json j = {{"model", r.dir},
                                {"kind", kindToken(r.kind)},
                                {"architecture", r.architecture},
                                {"ready", r.ready},
                                {"chat_template", r.chatTemplate},
                                {"weight_files", r.weightFiles},
                                {"weight_files_whole", r.filesChecked},
                                {"files_hashed", r.filesHashed},
                                {"bytes_hashed", r.bytesHashed},
                                {"bandwidth", bw},
                                {"findings", findings}};
    fmt::print("{}\n", j.dump(2));
}

int runDoctor(const DoctorCliOptions& o) {
    doctor::DoctorOptions opt;
    opt.deep = o.deep;
    opt.measureBandwidth = !o.noBandwidth;
    opt.requireChatTemplate = o.requireChat;

    // Progress: one rewritten line on a terminal, at most 5 per second.
    const bool tty = isatty(STDERR_FILENO);
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    bool shown = false;
    doctor::DoctorProgressFn progress;
    if (tty) {
        progress = [&](const doctor::DoctorProgress& p) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(200)) return;
            last = now;
            shown = true;
            std::string line = p.stage + " " + p.file;
            if (p.bytesTotal > 0)
                line += fmt::format("  {} / {}", mb(double(p.bytesDone)), mb(double(p.bytesTotal)));
            fmt::print(stderr, "\r{:<78.78}", line);
            std::fflush(stderr);
        };
    }
    installSigintHandler();
    auto r = doctor::diagnoseModel(o.dir, opt, progress, &interruptFlag());
    if (shown) fmt::print(stderr, "\r{:<78}\r", "");
    if (!r) {
        if (r.status().code() == ErrorCode::Cancelled) {
            std::fflush(stdout);
            fmt::print(stderr, "coli: interrupted\n");
            return kExitInterrupted;
        }
        printError(fmt::format("cannot check {}: {}", o.dir, r.status().message()));
        return r.status().code() == ErrorCode::InvalidArgument ? kExitUsage : kExitInternal;
    }
    if (o.json)
        printJson(r.value());
    else
        printText(r.value(), o);
    return r->ready ? kExitOk : kExitNotReady;
}

} // namespace

Command addDoctorCommand(CLI::App& root) {
    auto o = std::make_shared<DoctorCliOptions>();
    CLI::App* cmd = root.add_subcommand(
        "doctor", "Check that a model folder is complete, intact and loadable, and say what to do");
    cmd->footer(std::string(kExitCodesHelp) + " doctor: 0 = ready, 7 = not ready.");
    cmd->add_option("MODEL", o->dir, "Model folder (Hugging Face checkpoint or colibri container)")
        ->type_name("")
        ->required();
    cmd->add_flag("--deep", o->deep,
                  "Hash every file against the container manifest or the download receipt");
    cmd->add_flag("--no-bandwidth", o->noBandwidth, "Do not measure the disk's read bandwidth");
    cmd->add_flag("--require-chat", o->requireChat,
                  "A missing or unusable chat template makes the model not ready");
    cmd->add_flag("--json", o->json, "Print the report as JSON");
    return {cmd, [o] { return runDoctor(*o); }};
}

} // namespace coli::cli
