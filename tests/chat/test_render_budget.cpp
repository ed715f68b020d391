// The render budget (chat/render_budget.h): hostile templates that grow values exponentially or
// loop without end are stopped early with an error naming the line and the limit; a render can
// be cancelled from another thread; and every real template stays far below the default limits
// on a long conversation (the margins are printed and documented in docs/chat-templates.md).
#include "chat/chat_template.h"
#include "chat/jinja_eval.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace {

namespace fs = std::filesystem;
using coli::ChatMessage;
using coli::ChatTemplate;
using coli::ErrorCode;
using coli::RenderLimits;
using coli::RenderUsage;
using Clock = std::chrono::steady_clock;

// Peak resident memory of this process (VmHWM), in bytes.
size_t peakRss() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return size_t(std::stoull(line.substr(6))) * 1024;
    }
    return 0;
}

struct Rendered {
    coli::Result<std::string> result;
    RenderUsage usage;
    double seconds = 0;
    size_t rssGrowth = 0;
};

Rendered render(const std::string& templ, const RenderLimits& limits = {},
                const std::atomic<bool>* cancel = nullptr) {
    auto t = ChatTemplate::fromString(templ, "<s>", "</s>", "hostile.jinja");
    EXPECT_TRUE(t.isOk()) << t.status().toString();
    const size_t rss0 = peakRss();
    const auto t0 = Clock::now();
    Rendered r{coli::Status(ErrorCode::Internal, "not rendered"), {}, 0, 0};
    if (!t.isOk()) return r;
    r.result = t.value()->render({{"user", "hi"}}, true, std::nullopt, cancel, limits, &r.usage);
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.rssGrowth = peakRss() - rss0;
    return r;
}

// Every hostile template below doubles a value 64 times (2^64 bytes if nothing stopped it); each
// must fail at the line of the doubling, naming the memory budget and its limit, quickly and
// without taking much more memory than the budget.
void expectMemoryError(const std::string& name, const std::string& templ, int line,
                       const RenderLimits& limits = {}, const char* limitText = "64 MiB") {
    SCOPED_TRACE(name + ": " + templ);
    Rendered r = render(templ, limits);
    ASSERT_FALSE(r.result.isOk()) << "rendered " << r.result.value().size() << " bytes";
    const std::string msg = r.result.status().message();
    EXPECT_EQ(r.result.status().code(), ErrorCode::InvalidArgument) << msg;
    EXPECT_NE(msg.find("hostile.jinja:" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("memory budget"), std::string::npos) << msg;
    EXPECT_NE(msg.find(limitText), std::string::npos) << msg;
    EXPECT_LT(r.rssGrowth, size_t(512) << 20) << msg;
}

const char* kStrNs = "{% set ns = namespace(s='x') %}\n";
const char* kListNs = "{% set ns = namespace(l=['x']) %}\n";
const char* kLoop = "{% for i in range(64) %}";
const char* kEnd = "{% endfor %}";

std::string doubling(const char* ns, const std::string& step, const std::string& after = "") {
    return std::string(ns) + kLoop + step + kEnd + after;
}

RenderLimits fourMiB() {
    RenderLimits l;
    l.maxBytes = size_t(4) << 20;
    return l;
}

TEST(RenderBudget, StringDoublingIsStoppedByTheMemoryBudget) {
    expectMemoryError("~", doubling(kStrNs, "{% set ns.s = ns.s ~ ns.s %}"), 2);
    expectMemoryError("+ on strings", doubling(kStrNs, "{% set ns.s = ns.s + ns.s %}"), 2);
    expectMemoryError("join filter", doubling(kStrNs, "{% set ns.s = [ns.s, ns.s]|join %}"), 2);
    // The same with the other value-building operations, under a 4 MiB budget (the walk to
    // 64 MiB only makes the test slower).
    const RenderLimits small = fourMiB();
    for (const auto& [name, step] : std::vector<std::pair<std::string, std::string>>{
             {"* 2", "{% set ns.s = ns.s * 2 %}"},
             {"str.join", "{% set ns.s = ''.join([ns.s, ns.s]) %}"},
             {"replace filter", "{% set ns.s = ns.s|replace('x', 'xx') %}"},
             {"str.replace", "{% set ns.s = ns.s.replace('x', 'xx') %}"},
             {"slice of a concatenation", "{% set ns.s = (ns.s ~ ns.s)[:] %}"},
             {"tojson of a list", "{% set ns.s = [ns.s, ns.s]|tojson %}"},
             {"string of a list", "{% set ns.s = [ns.s, ns.s]|string %}"},
             {"output", "{{ ns.s }}{% set ns.s = ns.s ~ ns.s %}"},
             {"set block", "{% set b %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = b %}"},
             {"dict of strings", "{% set ns.s = dict(a=ns.s, b=ns.s)|tojson %}"}})
        expectMemoryError(name, doubling(kStrNs, step), 2, small, "4 MiB");
}

TEST(RenderBudget, ListDoublingIsStoppedByTheMemoryBudget) {
    expectMemoryError("+ on lists", doubling(kListNs, "{% set ns.l = ns.l + ns.l %}"), 2);
    const RenderLimits small = fourMiB();
    expectMemoryError("* 2 on lists", doubling(kListNs, "{% set ns.l = ns.l * 2 %}"), 2, small,
                      "4 MiB");
    expectMemoryError("list of a joined string",
                      doubling(kListNs, "{% set ns.l = (ns.l|join ~ ns.l|join)|list %}"), 2, small,
                      "4 MiB");
    expectMemoryError("select | list",
                      doubling(kListNs, "{% set ns.l = (ns.l + ns.l)|select|list %}"), 2, small,
                      "4 MiB");
}

// Nesting shares instead of copying: [l, l] costs two items, but printing it doubles the text.
// The printing is checked as the text grows. (A 4 MiB budget: the walk to 64 MiB of short items
// only makes the test slower.)
TEST(RenderBudget, PrintingSharedNestedValuesIsStoppedByTheMemoryBudget) {
    const RenderLimits small = fourMiB();
    const std::string nest = doubling(kListNs, "{% set ns.l = [ns.l, ns.l] %}", "\n");
    expectMemoryError("print", nest + "{{ ns.l }}", 3, small, "4 MiB");
    expectMemoryError("tojson", nest + "{{ ns.l|tojson }}", 3, small, "4 MiB");
    expectMemoryError("tojson indent", nest + "{{ ns.l|tojson(indent=2) }}", 3, small, "4 MiB");
    expectMemoryError("join", nest + "{{ ns.l|join }}", 3, small, "4 MiB");
    expectMemoryError("string", nest + "{% set s = ns.l|string %}", 3, small, "4 MiB");
    const std::string dicts = "{% set ns = namespace(d={}) %}\n" + std::string(kLoop) +
                              "{% set ns.d = dict(a=ns.d, b=ns.d) %}" + kEnd + "\n";
    expectMemoryError("dict tojson", dicts + "{{ ns.d|tojson }}", 3, small, "4 MiB");
    expectMemoryError("dict print", dicts + "{{ ns.d }}", 3, small, "4 MiB");
    expectMemoryError("print, default budget", nest + "{{ ns.l }}", 3);
    expectMemoryError("huge indent", "\n\n{{ [1]|tojson(indent=100000000000) }}", 3);
    expectMemoryError("huge repetition", "\n{{ 'ab' * 1000000000000 }}", 2);
}

TEST(RenderBudget, ComparingSharedNestedValuesIsStoppedByTheOperationBudget) {
    Rendered r = render("{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(64) %}"
                        "{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}\n"
                        "{{ ns.a == ns.b }}");
    ASSERT_FALSE(r.result.isOk());
    const std::string msg = r.result.status().message();
    EXPECT_NE(msg.find("hostile.jinja:2:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("operation budget of 10000000"), std::string::npos) << msg;
}

TEST(RenderBudget, DeepNestingIsRefusedNotAStackOverflow) {
    Rendered r = render("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
                        "{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}");
    ASSERT_FALSE(r.result.isOk());
    EXPECT_NE(r.result.status().message().find("nested more than"), std::string::npos)
        << r.result.status().message();
    r = render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
    ASSERT_FALSE(r.result.isOk());
    EXPECT_EQ(r.result.status().code(), ErrorCode::Unsupported);
}

// 10^10 iterations without the budget. A tenth of the default budget keeps the test short under
// the sanitizers; the default itself is exercised by test_chat_budget_cli.
TEST(RenderBudget, NestedLoopsAreStoppedByTheOperationBudget) {
    RenderLimits tenth;
    tenth.maxOperations = RenderLimits{}.maxOperations / 10;
    Rendered r = render("{# nothing here #}\n{% for i in range(100000) %}"
                        "{% for j in range(100000) %}{% endfor %}{% endfor %}",
                        tenth);
    ASSERT_FALSE(r.result.isOk());
    const std::string msg = r.result.status().message();
    EXPECT_EQ(r.result.status().code(), ErrorCode::InvalidArgument) << msg;
    EXPECT_NE(msg.find("hostile.jinja:2:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("operation budget of 1000000 operations"), std::string::npos) << msg;
}

// Built-ins that scan text cost operations by its length: a loop over a large string cannot run
// for long within the budget.
TEST(RenderBudget, ScanningLargeTextCostsOperations) {
    Rendered r = render("{% set big = 'x' * 50000000 %}{% for i in range(100000) %}"
                        "{% if 'y' in big %}{% endif %}{% endfor %}");
    ASSERT_FALSE(r.result.isOk());
    EXPECT_NE(r.result.status().message().find("operation budget"), std::string::npos)
        << r.result.status().message();
}

TEST(RenderBudget, LimitsAreTheCallersChoice) {
    RenderLimits small;
    small.maxOperations = 100;
    Rendered r = render("{% for i in range(1000) %}{% endfor %}", small);
    ASSERT_FALSE(r.result.isOk());
    EXPECT_NE(r.result.status().message().find("operation budget of 100 operations"),
              std::string::npos)
        << r.result.status().message();
    RenderLimits tight;
    tight.maxBytes = 1000;
    r = render("{{ 'x' * 2000 }}", tight);
    ASSERT_FALSE(r.result.isOk());
    EXPECT_NE(r.result.status().message().find("1000 bytes"), std::string::npos)
        << r.result.status().message();
    r = render("{{ 'x' * 400 }}", tight);
    ASSERT_TRUE(r.result.isOk()) << r.result.status().toString();
    EXPECT_GE(r.usage.peakBytes, 400u + 400u); // the string and the output
    EXPECT_LE(r.usage.peakBytes, 1000u);
    EXPECT_GT(r.usage.operations, 0u);
}

// A render that would run for hours without a budget (10^10 iterations) stops once the flag is set
// from another thread: it returns Cancelled (a regression hangs until the CTest TIMEOUT). The
// latency is printed, not asserted (timing depends on the machine's load).
TEST(RenderBudget, CancelFromAnotherThreadStopsARender) {
    RenderLimits unlimited;
    unlimited.maxOperations = UINT64_MAX;
    std::atomic<bool> cancel{false};
    std::atomic<bool> started{false};
    Clock::time_point cancelledAt;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancelledAt = Clock::now();
        cancel.store(true);
        started.store(true);
    });
    Rendered r = render("{% for i in range(100000) %}\n{% for j in range(100000) %}"
                        "{% if i == j %}{% endif %}{% endfor %}{% endfor %}",
                        unlimited, &cancel);
    const auto returnedAt = Clock::now();
    canceller.join();
    ASSERT_TRUE(started.load());
    ASSERT_FALSE(r.result.isOk());
    EXPECT_EQ(r.result.status().code(), ErrorCode::Cancelled) << r.result.status().toString();
    EXPECT_NE(r.result.status().message().find("hostile.jinja:"), std::string::npos);
    std::printf("[cancel] returned %.1f ms after the flag was set\n",
                std::chrono::duration<double, std::milli>(returnedAt - cancelledAt).count());
}

std::string readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A long, realistic conversation: a system prompt, 60 exchanges of a few hundred to a few
// thousand characters (code, lists, unicode, reasoning blocks as Qwen3 writes them), ~250 KB of
// text, more than most of these models' contexts hold.
std::vector<ChatMessage> longConversation(bool withSystem) {
    std::vector<ChatMessage> m;
    if (withSystem)
        m.push_back({"system", "You are a careful assistant. Answer briefly, cite sources, and "
                               "format code in fenced blocks."});
    const std::string para = "Le vent se lève, il faut tenter de vivre — 風が立つ. The quick "
                             "brown fox jumps over the lazy dog; \"quotes\" and \\backslashes\\. ";
    for (int i = 0; i < 60; ++i) {
        std::string user = "Question " + std::to_string(i) + ": ";
        for (int k = 0; k < 2 + i % 5; ++k)
            user += para;
        std::string answer =
            (i % 3 == 0) ? "<think>\nLet me think about " + std::to_string(i) + ".\n</think>\n\n"
                         : "";
        answer += "Here is the answer:\n```python\ndef f(x):\n    return x * " + std::to_string(i) +
                  "\n```\n";
        for (int k = 0; k < 10 + i % 20; ++k)
            answer += "- " + para + "\n";
        m.push_back({"user", "  " + user + "\n"});
        m.push_back({"assistant", answer});
    }
    m.push_back({"user", "Thanks! One last question?"});
    return m;
}

struct RealTemplate {
    std::string name;
    std::unique_ptr<ChatTemplate> tmpl;
};

std::vector<RealTemplate> realTemplates() {
    std::vector<RealTemplate> out;
    const fs::path src(COLI_SOURCE_DIR);
    for (const auto& e : fs::directory_iterator(src / "tests/chat/templates")) {
        if (e.path().extension() != ".jinja") continue;
        auto t = ChatTemplate::fromString(readFile(e.path()), "<s>", "</s>",
                                          e.path().filename().string());
        EXPECT_TRUE(t.isOk()) << t.status().toString();
        if (t.isOk()) out.push_back({e.path().filename().string(), std::move(t.value())});
    }
    for (const auto& e : fs::directory_iterator(src / "resources/models")) {
        const fs::path cfg = e.path() / "tokenizer_config.json";
        if (!fs::exists(cfg)) continue;
        auto t = ChatTemplate::fromTokenizerConfig(cfg.string());
        EXPECT_TRUE(t.isOk()) << t.status().toString();
        if (t.isOk())
            out.push_back(
                {e.path().filename().string() + "/tokenizer_config.json", std::move(t.value())});
    }
    return out;
}

TEST(RenderBudget, RealTemplatesStayFarBelowTheDefaults) {
    const RenderLimits defaults;
    const auto templates = realTemplates();
    ASSERT_GE(templates.size(), 7u); // six published templates and the shipped model's
    for (const auto& t : templates) {
        SCOPED_TRACE(t.name);
        size_t chars = 0;
        RenderUsage usage;
        auto conv = longConversation(true);
        auto r = t.tmpl->render(conv, true, std::nullopt, nullptr, defaults, &usage);
        if (!r.isOk() && r.status().message().find("template raised") != std::string::npos) {
            conv = longConversation(false); // the template refuses a system message
            r = t.tmpl->render(conv, true, std::nullopt, nullptr, defaults, &usage);
        }
        ASSERT_TRUE(r.isOk()) << r.status().toString();
        for (const auto& m : conv)
            chars += m.content.size();
        std::printf("[budget] %-40s %zu messages, %zu bytes in, %zu out: %zu bytes "
                    "held at peak (%.2f%% of %zu), %llu operations (%.2f%% of %llu)\n",
                    t.name.c_str(), conv.size(), chars, r.value().size(), usage.peakBytes,
                    100.0 * double(usage.peakBytes) / double(defaults.maxBytes), defaults.maxBytes,
                    (unsigned long long)usage.operations,
                    100.0 * double(usage.operations) / double(defaults.maxOperations),
                    (unsigned long long)defaults.maxOperations);
        EXPECT_GT(r.value().size(), chars / 2);
        EXPECT_LT(usage.peakBytes, defaults.maxBytes / 10);
        EXPECT_LT(usage.operations, defaults.maxOperations / 10);
    }
}

} // namespace
