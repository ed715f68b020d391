// Session export (storage/session_export.h): the JSON parses back with every field and special
// character intact; the Markdown keeps message text (code fences, think blocks) as stored.
#include "storage/session_export.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace coli::storage;
using nlohmann::json;

namespace {

const std::string kTricky =
    "quotes \" and 'single', backslash \\ and \\n literally, tab\tend,\n"
    "control \x01\x1f, emoji 🦜, CJK 你好, RTL שלום, NUL-free </script>";
const std::string kCode = "Here:\n\n```cpp\nint main() { std::puts(\"```\"); }\n```\n\n"
                          "~~~\ntilde fence\n~~~\nDone.";
const std::string kThink = "<think>\nThe user wants *this*.\n</think>\nAnswer.";

SamplingSettings halfTemperatureTopK40() {
    SamplingSettings s;
    s.temperature = 0.5;
    s.topK = 40;
    return s;
}

SessionInfo sampleSession() {
    SessionInfo s;
    s.id = 7;
    s.title = "Tricky \"title\"\nwith a break";
    s.modelIdentity = "3f0c6d0d7a1e4c1b8f5e2a9d6b7c8e1f0a2b3c4d5e6f708192a3b4c5d6e7f809";
    s.modelPath = "/models/mixtral-tiny";
    s.createdMs = 1764547200123;
    s.updatedMs = 1764547265000;
    s.systemPrompt = "Be brief.";
    s.sampling.temperature = 0.5;
    s.sampling.topK = 40;
    s.seed = 18446744073709551615ull;
    return s;
}

std::vector<MessageRecord> sampleMessages() {
    std::vector<MessageRecord> m(4);
    m[0].position = 0;
    m[0].role = Role::User;
    m[0].text = kTricky;
    m[0].createdMs = 1764547200500;
    m[1].position = 1;
    m[1].role = Role::Assistant;
    m[1].text = kThink + "\n" + kCode;
    m[1].stopReason = StopReason::Eos;
    m[1].seed = 42;
    m[1].sampling = halfTemperatureTopK40();
    m[1].run = 3;
    m[2].position = 2;
    m[2].role = Role::User;
    m[2].text = "more?";
    m[3].position = 3;
    m[3].role = Role::Assistant;
    m[3].text = "```python\nprint('cut off"; // stopped inside a code block
    m[3].stopReason = StopReason::Cancelled;
    m[3].run = 99; // not among the runs given
    return m;
}

RunRecord sampleRun() {
    RunRecord r;
    r.id = 3;
    r.createdMs = 1764547210000;
    r.promptTokens = 30;
    r.generatedTokens = 12;
    r.tokensPerSecond = 9.5;
    r.ttftSeconds = 0.25;
    r.split = {1, 2, 0.5, 0.01, 0.1};
    r.tiers.routed = 100;
    r.tiers.hitsPinned = 50;
    r.tiers.hitsCache = 30;
    r.tiers.inFlightHits = 10;
    r.tiers.misses = 20;
    r.tiers.bytesRead = 3 * 1048576;
    r.tiers.tokens = 42;
    r.tiers.prefill = RunTierCounters::Prefill{1048576, 32}; // the prompt: 1 MiB over 32 tokens
    return r;
}

} // namespace

TEST(SessionExport, JsonParsesBackWithEveryField) {
    const std::string text = exportJson(sampleSession(), sampleMessages(), {sampleRun()});
    const json j = json::parse(text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << text;
    EXPECT_EQ(j["format"], "colibri-session");
    EXPECT_EQ(j["version"], 2);
    EXPECT_EQ(j["title"], "Tricky \"title\"\nwith a break");
    EXPECT_EQ(j["created"], "2025-12-01T00:00:00.123Z");
    EXPECT_EQ(j["created_ms"], 1764547200123);
    EXPECT_EQ(j["updated_ms"], 1764547265000);
    EXPECT_EQ(j["model"]["path"], "/models/mixtral-tiny");
    EXPECT_EQ(j["model"]["identity"].get<std::string>().size(), 64u);
    EXPECT_EQ(j["system_prompt"], "Be brief.");
    EXPECT_EQ(j["sampling"], json({{"temperature", 0.5}, {"top_k", 40}}));
    EXPECT_EQ(j["seed"].get<uint64_t>(), 18446744073709551615ull);
    const json& msgs = j["messages"];
    ASSERT_EQ(msgs.size(), 4u);
    EXPECT_EQ(msgs[0]["role"], "user");
    EXPECT_EQ(msgs[0]["text"], kTricky); // every special character survives
    EXPECT_TRUE(msgs[0]["stop_reason"].is_null());
    EXPECT_TRUE(msgs[0]["seed"].is_null());
    EXPECT_TRUE(msgs[0]["sampling"].is_null());
    EXPECT_TRUE(msgs[0]["run"].is_null());
    EXPECT_EQ(msgs[1]["role"], "assistant");
    EXPECT_EQ(msgs[1]["text"], kThink + "\n" + kCode);
    EXPECT_EQ(msgs[1]["stop_reason"], "eos");
    EXPECT_EQ(msgs[1]["seed"], 42);
    EXPECT_EQ(msgs[1]["sampling"]["top_k"], 40);
    const json& run = msgs[1]["run"];
    EXPECT_EQ(run["generated_tokens"], 12);
    EXPECT_EQ(run["tokens_per_second"], 9.5);
    EXPECT_EQ(run["time_split"]["expert_ffn_s"], 2.0);
    EXPECT_EQ(run["tiers"]["in_flight_hits"], 10);
    EXPECT_EQ(run["tiers"]["hits_vram"], 0);
    EXPECT_DOUBLE_EQ(run["expert_hit_rate"].get<double>(), 0.7);
    EXPECT_EQ(run["tiers"]["prefill_bytes_read"], 1048576);
    EXPECT_EQ(run["tiers"]["prefill_tokens"], 32);
    EXPECT_DOUBLE_EQ(run["mib_read_per_decode_token"].get<double>(), 2.0 / 10); // 3 - 1 MiB
    EXPECT_DOUBLE_EQ(run["mib_read_per_prompt_token"].get<double>(), 1.0 / 32);
    // A run saved before the prompt part was stored: the whole turn's figure, no prompt figure.
    RunRecord old = sampleRun();
    old.tiers.prefill.reset();
    const json jo = json::parse(exportJson(sampleSession(), sampleMessages(), {old}));
    const json& oldRun = jo["messages"][1]["run"];
    EXPECT_TRUE(oldRun["tiers"]["prefill_bytes_read"].is_null());
    EXPECT_DOUBLE_EQ(oldRun["mib_read_per_decode_token"].get<double>(), 3.0 / 42);
    EXPECT_TRUE(oldRun["mib_read_per_prompt_token"].is_null());
    // With a GPU tier: its hits in the counters and in the hit rate (found ready in VRAM or RAM).
    RunRecord gpu = sampleRun();
    gpu.tiers.hitsPinned = 20;
    gpu.tiers.hitsVram = 30;
    const json jg = json::parse(exportJson(sampleSession(), sampleMessages(), {gpu}));
    const json& gpuRun = jg["messages"][1]["run"];
    EXPECT_EQ(gpuRun["tiers"]["hits_vram"], 30);
    EXPECT_DOUBLE_EQ(gpuRun["expert_hit_rate"].get<double>(), 0.7);
    EXPECT_EQ(msgs[3]["stop_reason"], "cancelled");
    EXPECT_TRUE(msgs[3]["run"].is_null()); // its run was not given
    EXPECT_EQ(msgs[3]["position"], 3);
    EXPECT_EQ(j.find("id"), j.end()); // database ids are not exported
}

TEST(SessionExport, JsonReplacesInvalidUtf8InsteadOfFailing) {
    std::vector<MessageRecord> m(1);
    m[0].text = std::string("broken \xC3 byte \xFF end");
    const json j = json::parse(exportJson({}, m), nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j["messages"][0]["text"], "broken \xEF\xBF\xBD byte \xEF\xBF\xBD end");
    EXPECT_EQ(j["title"], "");
    EXPECT_TRUE(j["seed"].is_null());
    EXPECT_EQ(j["sampling"], json::object());
}

TEST(SessionExport, MarkdownKeepsMessagesAsStored) {
    const std::string md = exportMarkdown(sampleSession(), sampleMessages());
    EXPECT_EQ(md.rfind("# Tricky \"title\" with a break\n\n", 0), 0u) << md;
    EXPECT_NE(md.find("- Model: /models/mixtral-tiny (identity 3f0c6d0d7a1e)\n"), std::string::npos)
        << md;
    EXPECT_NE(md.find("- Created: 2025-12-01T00:00:00.123Z\n"), std::string::npos);
    EXPECT_NE(md.find("- Sampling: temperature 0.5, top_k 40\n"), std::string::npos) << md;
    EXPECT_NE(md.find("- Seed: 18446744073709551615\n"), std::string::npos);
    EXPECT_NE(md.find("\n## System prompt\n\nBe brief.\n"), std::string::npos);
    EXPECT_NE(md.find("\n## User\n\n" + kTricky + "\n"), std::string::npos);
    // Think blocks and code fences are kept byte for byte.
    EXPECT_NE(md.find("\n## Assistant\n\n" + kThink + "\n" + kCode + "\n"), std::string::npos)
        << md;
    // Roles in order.
    const size_t u1 = md.find("## User"), a1 = md.find("## Assistant");
    const size_t u2 = md.find("## User", u1 + 1), a2 = md.find("## Assistant", a1 + 1);
    EXPECT_LT(u1, a1);
    EXPECT_LT(a1, u2);
    EXPECT_LT(u2, a2);
    EXPECT_EQ(md.find("*(stopped: eos)*"), std::string::npos); // an answer that ended by itself
    // An answer stopped inside a code block: the fence is closed so the rest stays prose.
    EXPECT_NE(md.find("```python\nprint('cut off\n```\n\n*(stopped: cancelled)*\n"),
              std::string::npos)
        << md;
}

TEST(SessionExport, MarkdownOfAnEmptySession) {
    SessionInfo s;
    s.createdMs = 0;
    const std::string md = exportMarkdown(s, {});
    EXPECT_EQ(md, "# Untitled session\n\n- Created: 1970-01-01T00:00:00.000Z\n");
}

TEST(SessionExport, MarkdownClosesOnlyFencesLeftOpen) {
    std::vector<MessageRecord> m(1);
    m[0].role = Role::Assistant;
    // A longer fence holds a shorter one; ``` with a backtick in its info string is not a fence.
    m[0].text = "````md\n```\ninner\n```\n````\n``` a`b\ntext";
    EXPECT_EQ(exportMarkdown({}, m).find("text\n```"), std::string::npos);
    m[0].text = "~~~~\ncode\n~~~\nstill code";
    EXPECT_NE(exportMarkdown({}, m).find("still code\n~~~~\n"), std::string::npos);
}
