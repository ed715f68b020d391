// The session API (storage/sessions.h): sessions, messages, runs, the last session, one
// transaction per write, full-text search kept in step with inserts, updates and deletes, user
// text that must never be read as FTS5 syntax, a locked database reported as "busy, retry".
#include "storage/database.h"
#include "storage/sessions.h"
#include "storage_test_util.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

using namespace coli::storage;
using coli::ErrorCode;
using storage_test::RawDb;
using storage_test::TempDir;

namespace {

class Sessions : public ::testing::Test {
protected:
    void SetUp() override {
        auto st = Storage::open(path);
        ASSERT_TRUE(st.isOk()) << st.status().toString();
        storage = std::move(st.value());
        store = std::make_unique<SessionStore>(*storage);
    }

    int64_t newSession(const std::string& title = "a chat", int64_t createdMs = 0) {
        SessionInfo info;
        info.title = title;
        info.createdMs = createdMs;
        auto id = store->createSession(info);
        EXPECT_TRUE(id.isOk()) << id.status().toString();
        return id.isOk() ? id.value() : -1;
    }

    int64_t append(int64_t session, int position, Role role, const std::string& text,
                   int64_t createdMs = 0) {
        MessageRecord m;
        m.session = session;
        m.position = position;
        m.role = role;
        m.text = text;
        m.createdMs = createdMs;
        auto id = store->appendMessage(m);
        EXPECT_TRUE(id.isOk()) << id.status().toString();
        return id.isOk() ? id.value() : -1;
    }

    std::vector<int64_t> found(const std::string& query) {
        auto hits = store->searchSessions(query);
        EXPECT_TRUE(hits.isOk()) << "query '" << query << "': " << hits.status().toString();
        std::vector<int64_t> ids;
        if (hits.isOk())
            for (const SearchHit& h : hits.value())
                ids.push_back(h.session);
        return ids;
    }

    void expectIndexesConsistent() {
        RawDb raw(path);
        std::string err;
        EXPECT_EQ(raw.exec("INSERT INTO messages_fts(messages_fts) VALUES('integrity-check');"
                           "INSERT INTO sessions_fts(sessions_fts) VALUES('integrity-check');",
                           &err),
                  SQLITE_OK)
            << err;
    }

    TempDir dir;
    std::string path = dir.file("colibri.db");
    std::unique_ptr<Storage> storage;
    std::unique_ptr<SessionStore> store;
};

RunRecord sampleRun(int64_t session) {
    RunRecord r;
    r.session = session;
    r.createdMs = 1764547260000;
    r.promptTokens = 42;
    r.reusedTokens = 10;
    r.generatedTokens = 120;
    r.tokensPerSecond = 18.5;
    r.ttftSeconds = 0.84;
    r.prefillSeconds = 0.62;
    r.decodeSeconds = 6.49;
    r.split = {2.1, 3.0, 1.6, 0.05, 0.35};
    r.tiers = {30720, 6144, 20480, 1024, 4096, 13841203200, 512, 2048, 1536, 152, std::nullopt};
    r.tiers.prefill = RunTierCounters::Prefill{1073741824, 32}; // the prompt's 32 tokens: 1 GiB
    return r;
}

} // namespace

TEST_F(Sessions, CreateReadAndListMostRecentlyUpdatedFirst) {
    SessionInfo info;
    info.title = "Crème brûlée";
    info.modelIdentity = "3f0c6d0d7a1e";
    info.modelPath = "/models/mixtral-tiny";
    info.createdMs = 1000;
    info.systemPrompt = "You are terse.";
    info.sampling.temperature = 0.25;
    info.sampling.topK = 20;
    info.sampling.maxNewTokens = 64;
    info.seed = std::numeric_limits<uint64_t>::max(); // all 64 bits survive the int64 column
    auto a = store->createSession(info);
    ASSERT_TRUE(a.isOk()) << a.status().toString();
    auto back = store->session(a.value());
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    SessionInfo expected = info;
    expected.id = a.value();
    expected.updatedMs = 1000; // 0 at create: the created time
    EXPECT_EQ(back.value(), expected);

    const int64_t b = newSession("b", 3000);
    const int64_t c = newSession("c", 2000);
    const int64_t d = newSession("d", 3000); // same time as b: the newer id first
    auto list = store->listSessions();
    ASSERT_TRUE(list.isOk()) << list.status().toString();
    std::vector<int64_t> order;
    for (const SessionInfo& s : list.value())
        order.push_back(s.id);
    EXPECT_EQ(order, (std::vector<int64_t>{d, b, c, a.value()}));

    // createdMs 0: now.
    const int64_t now = newSession("now");
    auto n = store->session(now);
    ASSERT_TRUE(n.isOk());
    EXPECT_GT(n.value().createdMs, 1764547200000); // after 2025-12-01
    EXPECT_EQ(n.value().updatedMs, n.value().createdMs);

    auto missing = store->session(9999);
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

TEST_F(Sessions, RenameKeepsTheOrderSettingsBumpIt) {
    const int64_t a = newSession("a", 1000);
    const int64_t b = newSession("b", 2000);
    ASSERT_TRUE(store->renameSession(a, "renamed").isOk());
    auto sa = store->session(a);
    ASSERT_TRUE(sa.isOk());
    EXPECT_EQ(sa.value().title, "renamed");
    EXPECT_EQ(sa.value().updatedMs, 1000);
    ASSERT_TRUE(store->setSessionModel(a, "c0ffee", "/models/other").isOk());
    sa = store->session(a);
    EXPECT_EQ(sa.value().modelIdentity, "c0ffee");
    EXPECT_EQ(sa.value().modelPath, "/models/other");
    EXPECT_EQ(sa.value().updatedMs, 1000);

    SessionSettings settings;
    settings.systemPrompt = "Answer in French.";
    settings.sampling.topP = 0.9;
    settings.sampling.repeatPenalty = 1.1;
    settings.seed = 7;
    ASSERT_TRUE(store->setSessionSettings(a, settings).isOk());
    sa = store->session(a);
    ASSERT_TRUE(sa.isOk()) << sa.status().toString();
    EXPECT_EQ(sa.value().systemPrompt, "Answer in French.");
    EXPECT_EQ(sa.value().sampling, settings.sampling);
    EXPECT_EQ(sa.value().seed, 7u);
    EXPECT_GT(sa.value().updatedMs, 2000);
    auto list = store->listSessions();
    ASSERT_TRUE(list.isOk());
    EXPECT_EQ(list.value()[0].id, a);
    EXPECT_EQ(list.value()[1].id, b);
    // Back to no fixed seed and model defaults.
    ASSERT_TRUE(store->setSessionSettings(a, {}).isOk());
    sa = store->session(a);
    EXPECT_FALSE(sa.value().seed.has_value());
    EXPECT_EQ(sa.value().sampling, SamplingSettings{});

    EXPECT_EQ(store->renameSession(9999, "x").code(), ErrorCode::NotFound);
    EXPECT_EQ(store->setSessionModel(9999, "x", "y").code(), ErrorCode::NotFound);
    EXPECT_EQ(store->setSessionSettings(9999, {}).code(), ErrorCode::NotFound);
}

TEST_F(Sessions, MessagesAreAppendedStreamedAndFinished) {
    const int64_t s = newSession("chat", 1000);
    const int64_t u = append(s, 0, Role::User, "Hello?", 5000);
    auto info = store->session(s);
    EXPECT_EQ(info.value().updatedMs, 5000); // appending bumps the session
    EXPECT_EQ(info.value().messageCount, 1);

    MessageRecord answer;
    answer.session = s;
    answer.position = 1;
    answer.role = Role::Assistant;
    answer.createdMs = 6000;
    answer.seed = 1ull << 63;
    answer.sampling = SamplingSettings();
    answer.sampling->temperature = 0.0;
    auto a = store->appendMessage(answer);
    ASSERT_TRUE(a.isOk()) << a.status().toString();
    ASSERT_TRUE(store->updateMessageText(a.value(), "<think>hmm</think>Hi").isOk());
    auto msgs = store->loadMessages(s);
    ASSERT_TRUE(msgs.isOk());
    ASSERT_EQ(msgs.value().size(), 2u);
    EXPECT_EQ(msgs.value()[1].text, "<think>hmm</think>Hi");
    EXPECT_FALSE(msgs.value()[1].stopReason.has_value());

    auto run = store->addRun(sampleRun(s));
    ASSERT_TRUE(run.isOk()) << run.status().toString();
    ASSERT_TRUE(
        store->finishMessage(a.value(), "<think>hmm</think>Hi there.", StopReason::Eos, run.value())
            .isOk());
    msgs = store->loadMessages(s);
    ASSERT_TRUE(msgs.isOk());
    MessageRecord expected = answer;
    expected.id = a.value();
    expected.text = "<think>hmm</think>Hi there.";
    expected.stopReason = StopReason::Eos;
    expected.run = run.value();
    EXPECT_EQ(msgs.value()[1], expected);
    EXPECT_EQ(msgs.value()[0].id, u);
    EXPECT_EQ(msgs.value()[0].role, Role::User);
    EXPECT_FALSE(msgs.value()[0].sampling.has_value());
    EXPECT_GT(store->session(s).value().updatedMs, 6000); // finishing bumps it to now

    // Every stop reason round-trips.
    for (StopReason r : {StopReason::MaxTokens, StopReason::StopString, StopReason::Cancelled,
                         StopReason::ContextFull, StopReason::Failed}) {
        ASSERT_TRUE(store->finishMessage(a.value(), "x", r).isOk());
        EXPECT_EQ(store->loadMessages(s).value()[1].stopReason, r);
        EXPECT_FALSE(store->loadMessages(s).value()[1].run.has_value());
    }
}

TEST_F(Sessions, BadMessageWritesAreRefusedAndChangeNothing) {
    const int64_t s = newSession();
    const int64_t other = newSession("other");
    append(s, 0, Role::User, "one");
    const uint64_t commits = storage->commits();
    MessageRecord m;
    m.session = s;
    m.position = 0; // taken
    auto taken = store->appendMessage(m);
    EXPECT_EQ(taken.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(taken.status().message().find("position 0"), std::string::npos);
    m.position = -1;
    EXPECT_EQ(store->appendMessage(m).status().code(), ErrorCode::InvalidArgument);
    m.position = 1;
    m.session = 9999;
    EXPECT_EQ(store->appendMessage(m).status().code(), ErrorCode::NotFound);
    auto otherRun = store->addRun(sampleRun(other));
    ASSERT_TRUE(otherRun.isOk());
    const uint64_t afterRun = storage->commits();
    EXPECT_EQ(afterRun, commits + 1);
    m.session = s;
    m.run = otherRun.value(); // a run of another session
    EXPECT_EQ(store->appendMessage(m).status().code(), ErrorCode::NotFound);
    EXPECT_EQ(store->finishMessage(9999, "x", StopReason::Eos).code(), ErrorCode::NotFound);
    const int64_t first = store->loadMessages(s).value()[0].id;
    EXPECT_EQ(store->finishMessage(first, "x", StopReason::Eos, otherRun.value()).code(),
              ErrorCode::NotFound);
    EXPECT_EQ(store->deleteMessagesFrom(s, -1).status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(storage->commits(), afterRun);
    // (A single UPDATE that finds no row still ends its own, empty, transaction.)
    EXPECT_EQ(store->updateMessageText(9999, "x").code(), ErrorCode::NotFound);
    auto msgs = store->loadMessages(s);
    ASSERT_EQ(msgs.value().size(), 1u);
    EXPECT_EQ(msgs.value()[0].text, "one");
}

TEST_F(Sessions, EachWriteIsOneTransaction) {
    auto delta = [&](const std::function<bool()>& write) {
        const uint64_t before = storage->commits();
        EXPECT_TRUE(write());
        return storage->commits() - before;
    };
    int64_t s = 0, m = 0, r = 0;
    EXPECT_EQ(delta([&] {
                  s = newSession();
                  return s > 0;
              }),
              1u);
    EXPECT_EQ(delta([&] {
                  m = append(s, 0, Role::User, "hi");
                  return m > 0;
              }),
              1u);
    EXPECT_EQ(delta([&] { return store->updateMessageText(m, "hi there").isOk(); }), 1u);
    EXPECT_EQ(delta([&] {
                  auto id = store->addRun(sampleRun(s));
                  r = id.isOk() ? id.value() : 0;
                  return id.isOk();
              }),
              1u);
    EXPECT_EQ(delta([&] { return store->finishMessage(m, "x", StopReason::Eos, r).isOk(); }), 1u);
    EXPECT_EQ(delta([&] { return store->renameSession(s, "t").isOk(); }), 1u);
    EXPECT_EQ(delta([&] { return store->setSessionModel(s, "i", "p").isOk(); }), 1u);
    EXPECT_EQ(delta([&] { return store->setSessionSettings(s, {}).isOk(); }), 1u);
    EXPECT_EQ(delta([&] { return store->setLastSessionId(s).isOk(); }), 1u);
    EXPECT_EQ(delta([&] { return store->deleteMessagesFrom(s, 0).isOk(); }), 1u);
    EXPECT_EQ(delta([&] { return store->deleteSession(s).isOk(); }), 1u);
    // Reads write nothing.
    EXPECT_EQ(delta([&] { return store->listSessions().isOk() && store->loadRuns(s).isOk(); }), 0u);
}

TEST_F(Sessions, DeleteMessagesFromAPositionForEditAndResend) {
    const int64_t s = newSession();
    for (int i = 0; i < 4; ++i)
        append(s, i, i % 2 ? Role::Assistant : Role::User, "turn " + std::to_string(i));
    auto run = store->addRun(sampleRun(s));
    ASSERT_TRUE(run.isOk());
    auto n = store->deleteMessagesFrom(s, 2);
    ASSERT_TRUE(n.isOk()) << n.status().toString();
    EXPECT_EQ(n.value(), 2);
    auto msgs = store->loadMessages(s);
    ASSERT_EQ(msgs.value().size(), 2u);
    EXPECT_EQ(msgs.value()[1].text, "turn 1");
    EXPECT_EQ(store->loadRuns(s).value().size(), 1u); // runs stay
    append(s, 2, Role::User, "edited");               // the position is free again
    EXPECT_EQ(store->deleteMessagesFrom(s, 10).value(), 0);
    EXPECT_EQ(store->deleteMessagesFrom(9999, 0).value(), 0);
}

TEST_F(Sessions, DeletingASessionDeletesItsMessagesRunsAndSearchEntries) {
    const int64_t s = newSession("zeppelin");
    const int64_t keep = newSession("other");
    append(s, 0, Role::User, "quokka");
    append(keep, 0, Role::User, "quokka");
    ASSERT_TRUE(store->addRun(sampleRun(s)).isOk());
    ASSERT_TRUE(store->setLastSessionId(s).isOk());
    ASSERT_TRUE(store->deleteSession(s).isOk());
    EXPECT_EQ(store->session(s).status().code(), ErrorCode::NotFound);
    EXPECT_TRUE(store->loadMessages(s).value().empty());
    EXPECT_TRUE(store->loadRuns(s).value().empty());
    EXPECT_TRUE(found("zeppelin").empty());
    EXPECT_EQ(found("quokka"), std::vector<int64_t>{keep});
    EXPECT_EQ(store->lastSessionId().value(), std::nullopt);
    EXPECT_EQ(store->deleteSession(s).code(), ErrorCode::NotFound);
    RawDb raw(path);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM messages"), 1);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM runs"), 0);
    expectIndexesConsistent();
}

TEST_F(Sessions, RunsRoundTripAndBadValuesAreRefused) {
    const int64_t s = newSession();
    RunRecord r = sampleRun(s);
    auto id = store->addRun(r);
    ASSERT_TRUE(id.isOk()) << id.status().toString();
    RunRecord second = sampleRun(s);
    second.createdMs = 0; // now
    second.tiers.bytesRead = uint64_t(std::numeric_limits<int64_t>::max());
    second.tiers.prefill.reset(); // unknown: stored as NULL, read back unknown
    second.tiers.hitsVram = 3072; // computed on the GPU (schema version 6)
    ASSERT_TRUE(store->addRun(second).isOk());
    auto runs = store->loadRuns(s);
    ASSERT_TRUE(runs.isOk()) << runs.status().toString();
    ASSERT_EQ(runs.value().size(), 2u);
    r.id = id.value();
    EXPECT_EQ(runs.value()[0], r);
    EXPECT_GT(runs.value()[1].createdMs, 1764547200000);
    EXPECT_EQ(runs.value()[1].tiers.bytesRead, uint64_t(std::numeric_limits<int64_t>::max()));
    EXPECT_FALSE(runs.value()[1].tiers.prefill.has_value());
    EXPECT_EQ(runs.value()[0].tiers.hitsVram, 0u);
    EXPECT_EQ(runs.value()[1].tiers.hitsVram, 3072u);
    EXPECT_DOUBLE_EQ(r.expertHitRate(), (6144.0 + 20480 - 1024) / 30720);
    // VRAM hits are hits: found ready where they were computed (tiers::hitRate).
    EXPECT_DOUBLE_EQ(runs.value()[1].expertHitRate(), (3072.0 + 6144 + 20480 - 1024) / 30720);
    // Decode steps apart from the prompt: (all bytes - the prompt's) / (all tokens - 32).
    EXPECT_DOUBLE_EQ(r.mibReadPerDecodeToken(), (13841203200.0 - 1073741824) / 1048576 / 120);
    EXPECT_DOUBLE_EQ(r.mibReadPerPromptToken(), 1024.0 / 32);
    EXPECT_EQ(RunRecord{}.expertHitRate(), 0.0); // a dense model routes nothing
    EXPECT_EQ(RunRecord{}.mibReadPerDecodeToken(), 0.0);
    EXPECT_EQ(RunRecord{}.mibReadPerPromptToken(), -1.0);

    const uint64_t commits = storage->commits();
    RunRecord bad = sampleRun(s);
    bad.generatedTokens = -1;
    EXPECT_EQ(store->addRun(bad).status().code(), ErrorCode::InvalidArgument);
    bad = sampleRun(s);
    bad.split.samplingS = std::nan("");
    auto nan = store->addRun(bad);
    EXPECT_EQ(nan.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(nan.status().message().find("sampling_s"), std::string::npos);
    bad = sampleRun(s);
    bad.ttftSeconds = std::numeric_limits<double>::infinity();
    EXPECT_EQ(store->addRun(bad).status().code(), ErrorCode::InvalidArgument);
    bad = sampleRun(s);
    bad.tiers.misses = std::numeric_limits<uint64_t>::max();
    EXPECT_EQ(store->addRun(bad).status().code(), ErrorCode::InvalidArgument);
    bad = sampleRun(s);
    bad.tiers.prefill->tokens = bad.tiers.tokens + 1; // the prompt's part exceeds the whole
    auto over = store->addRun(bad);
    EXPECT_EQ(over.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(over.status().message().find("prefill_tier_tokens"), std::string::npos);
    bad = sampleRun(s);
    bad.tiers.hitsVram = bad.tiers.routed + 1; // routed counts the GPU's accesses too
    auto vram = store->addRun(bad);
    EXPECT_EQ(vram.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(vram.status().message().find("hits_vram"), std::string::npos);
    bad = sampleRun(9999);
    EXPECT_EQ(store->addRun(bad).status().code(), ErrorCode::NotFound);
    EXPECT_EQ(storage->commits(), commits);
}

TEST_F(Sessions, AnAnswerEndsWithItsRunInOneTransaction) {
    const int64_t s = newSession();
    const int64_t m = append(s, 0, Role::Assistant, "");
    const uint64_t before = storage->commits();
    auto run = store->finishAnswer(m, "done", StopReason::Eos, sampleRun(s));
    ASSERT_TRUE(run.isOk()) << run.status().toString();
    EXPECT_EQ(storage->commits() - before, 1u);
    auto messages = store->loadMessages(s);
    ASSERT_TRUE(messages.isOk());
    EXPECT_EQ(messages.value()[0].text, "done");
    EXPECT_EQ(messages.value()[0].run, run.value());
    EXPECT_EQ(store->loadRuns(s).value().size(), 1u);
    // A message that is not there: neither the run nor anything else is written.
    auto missing = store->finishAnswer(m + 100, "x", StopReason::Eos, sampleRun(s));
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_EQ(store->loadRuns(s).value().size(), 1u);
    EXPECT_EQ(storage->commits() - before, 1u);
}

TEST_F(Sessions, LastSessionIsRememberedInTheDatabase) {
    EXPECT_EQ(store->lastSessionId().value(), std::nullopt);
    const int64_t s = newSession();
    ASSERT_TRUE(store->setLastSessionId(s).isOk());
    EXPECT_EQ(store->lastSessionId().value(), s);
    EXPECT_EQ(store->setLastSessionId(9999).code(), ErrorCode::NotFound);
    EXPECT_EQ(store->lastSessionId().value(), s);
    // Another Storage on the same file (the next start of the app) sees it.
    {
        auto again = Storage::open(path);
        ASSERT_TRUE(again.isOk());
        EXPECT_EQ(SessionStore(*again.value()).lastSessionId().value(), s);
    }
    ASSERT_TRUE(store->setLastSessionId(std::nullopt).isOk());
    EXPECT_EQ(store->lastSessionId().value(), std::nullopt);
}

TEST_F(Sessions, SearchFindsAWordAfterInsertAndUpdateNotAfterDelete) {
    const int64_t s = newSession("Holiday plans");
    const int64_t other = newSession("Groceries");
    append(other, 0, Role::User, "milk and bread");
    EXPECT_TRUE(found("aardvark").empty());
    const int64_t m = append(s, 0, Role::User, "Tell me about the aardvark.");
    EXPECT_EQ(found("aardvark"), std::vector<int64_t>{s});
    // The streaming save replaces the text: the old word goes, the new one comes.
    ASSERT_TRUE(store->updateMessageText(m, "Tell me about the pangolin.").isOk());
    EXPECT_TRUE(found("aardvark").empty());
    EXPECT_EQ(found("pangolin"), std::vector<int64_t>{s});
    ASSERT_TRUE(store->finishMessage(m, "Tell me about the okapi.", StopReason::Eos).isOk());
    EXPECT_TRUE(found("pangolin").empty());
    EXPECT_EQ(found("okapi"), std::vector<int64_t>{s});
    ASSERT_TRUE(store->deleteMessagesFrom(s, 0).isOk());
    EXPECT_TRUE(found("okapi").empty());
    // Titles too.
    EXPECT_EQ(found("holiday"), std::vector<int64_t>{s});
    ASSERT_TRUE(store->renameSession(s, "Trip to Lisbon").isOk());
    EXPECT_TRUE(found("holiday").empty());
    EXPECT_EQ(found("lisbon"), std::vector<int64_t>{s});
    EXPECT_EQ(found("bread"), std::vector<int64_t>{other});
    expectIndexesConsistent();
}

TEST_F(Sessions, SearchIgnoresCaseAndDiacriticsAndMatchesPrefixes) {
    const int64_t s = newSession("Café crème");
    append(s, 0, Role::User, "Über naïve résumé");
    EXPECT_EQ(found("CAFE"), std::vector<int64_t>{s});
    EXPECT_EQ(found("creme"), std::vector<int64_t>{s});
    EXPECT_EQ(found("uber naive"), std::vector<int64_t>{s});
    EXPECT_EQ(found("résumé"), std::vector<int64_t>{s});
    EXPECT_EQ(found("resu"), std::vector<int64_t>{s}); // a word being typed
    EXPECT_TRUE(found("naive zebra").empty());         // every word must match
}

TEST_F(Sessions, SearchTextIsNeverReadAsQuerySyntax) {
    const int64_t quote = newSession("quotes");
    append(quote, 0, Role::User, R"(she wrote foo"bar and left)");
    const int64_t ops = newSession("operators");
    append(ops, 0, Role::User, "this AND that OR NOT near");
    for (const char* q : {"foo\"bar",  "\"",
                          "\"\"",      "AND",
                          "OR",        "NOT",
                          "NEAR(",     "NEAR(a b, 2)",
                          "*",         "^start",
                          "-minus",    "text:foo",
                          "title : x", "(",
                          ")",         "a + b",
                          "{text}: x", "'",
                          "\\",        "--",
                          "foo\"",     "\"unterminated",
                          "\x01",      "",
                          "   \t\n"}) {
        auto hits = store->searchSessions(q);
        EXPECT_TRUE(hits.isOk()) << "query [" << q << "]: " << hits.status().toString();
    }
    EXPECT_EQ(found(R"(foo"bar)"), std::vector<int64_t>{quote});
    // "AND" is a word to find (both texts have it), not an operator missing its operands.
    auto andHits = found("AND");
    std::sort(andHits.begin(), andHits.end());
    EXPECT_EQ(andHits, (std::vector<int64_t>{quote, ops}));
    EXPECT_EQ(found("NOT"), std::vector<int64_t>{ops});
    EXPECT_EQ(found("NEAR("), std::vector<int64_t>{ops});
    EXPECT_TRUE(found("").empty());
    EXPECT_TRUE(found("  ").empty());
}

TEST_F(Sessions, SearchRanksSnipsAndLimits) {
    const int64_t once = newSession("notes");
    append(once, 0, Role::User,
           "a long message that mentions lemur only once among many other words about zoos, "
           "parks, animals, keepers, tickets, opening hours and the weather");
    const int64_t often = newSession("more notes");
    append(often, 0, Role::User, "lemur lemur lemur");
    auto hits = store->searchSessions("lemur");
    ASSERT_TRUE(hits.isOk());
    ASSERT_EQ(hits.value().size(), 2u);
    EXPECT_EQ(hits.value()[0].session, often);
    EXPECT_EQ(hits.value()[1].session, once);
    EXPECT_LT(hits.value()[0].rank, hits.value()[1].rank);
    const std::string marked =
        std::string(kMatchOpen) + "lemur" + std::string(kMatchClose) + " only once";
    EXPECT_NE(hits.value()[1].snippet.find(marked), std::string::npos) << hits.value()[1].snippet;
    auto one = store->searchSessions("lemur", 1);
    ASSERT_TRUE(one.isOk());
    ASSERT_EQ(one.value().size(), 1u);
    EXPECT_EQ(one.value()[0].session, often);
    // A session matching in its title and in several messages is one hit.
    const int64_t both = newSession("lemur facts");
    append(both, 0, Role::User, "lemur");
    append(both, 1, Role::Assistant, "lemur");
    auto all = found("lemur");
    EXPECT_EQ(all.size(), 3u);
    EXPECT_EQ(std::count(all.begin(), all.end(), both), 1);
}

TEST_F(Sessions, ALockedDatabaseIsBusyRetryableAndNothingIsWritten) {
    // A Storage that waits only briefly for the lock.
    store.reset();
    storage.reset();
    OpenOptions quick;
    quick.busyTimeoutMs = 50;
    auto st = Storage::open(path, quick);
    ASSERT_TRUE(st.isOk());
    storage = std::move(st.value());
    store = std::make_unique<SessionStore>(*storage);
    const int64_t s = newSession();
    const int64_t m = append(s, 0, Role::User, "first");

    RawDb other(path);
    ASSERT_EQ(other.exec("BEGIN IMMEDIATE"), SQLITE_OK); // another writer holds the lock
    MessageRecord next;
    next.session = s;
    next.position = 1;
    next.text = "second";
    auto appended = store->appendMessage(next);
    ASSERT_FALSE(appended.isOk());
    EXPECT_EQ(appended.status().code(), ErrorCode::Io);
    EXPECT_TRUE(isBusy(appended.status())) << appended.status().toString();
    EXPECT_NE(appended.status().message().find(path), std::string::npos);
    const coli::Status update = store->updateMessageText(m, "changed");
    EXPECT_TRUE(isBusy(update)) << update.toString();
    EXPECT_TRUE(isBusy(store->createSession({}).status()));
    EXPECT_TRUE(isBusy(store->addRun(sampleRun(s)).status()));
    EXPECT_TRUE(isBusy(store->finishMessage(m, "x", StopReason::Eos)));
    EXPECT_TRUE(isBusy(store->deleteSession(s)));
    // Reads go on (WAL).
    auto msgs = store->loadMessages(s);
    ASSERT_TRUE(msgs.isOk()) << msgs.status().toString();
    EXPECT_EQ(msgs.value().size(), 1u);
    EXPECT_EQ(msgs.value()[0].text, "first");
    ASSERT_EQ(other.exec("COMMIT"), SQLITE_OK);
    // The same calls succeed when retried.
    ASSERT_TRUE(store->appendMessage(next).isOk());
    ASSERT_TRUE(store->updateMessageText(m, "changed").isOk());
    msgs = store->loadMessages(s);
    ASSERT_EQ(msgs.value().size(), 2u);
    EXPECT_EQ(msgs.value()[0].text, "changed");
    EXPECT_EQ(msgs.value()[1].text, "second");
}

TEST(SessionsBusy, OnlyLockedIsBusy) {
    EXPECT_FALSE(isBusy(coli::Status()));
    EXPECT_FALSE(isBusy({ErrorCode::NotFound, "x.db: no session 3"}));
    EXPECT_FALSE(isBusy({ErrorCode::Io, "x.db: disk full (SQLite: database or disk is full)"}));
    EXPECT_FALSE(
        isBusy({ErrorCode::Io, "x.db: cannot write: the file or its folder is read-only"}));
}

TEST_F(Sessions, StoredValuesThisCodeDoesNotWriteAreMalformed) {
    const int64_t s = newSession();
    append(s, 0, Role::User, "hi");
    {
        RawDb raw(path);
        // Valid JSON objects pass the CHECK, but the values are not numbers.
        ASSERT_EQ(raw.exec("UPDATE sessions SET sampling = '{\"temperature\": \"hot\"}'"),
                  SQLITE_OK);
    }
    auto info = store->session(s);
    EXPECT_EQ(info.status().code(), ErrorCode::Malformed);
    EXPECT_NE(info.status().message().find("session " + std::to_string(s)), std::string::npos);
    EXPECT_EQ(store->listSessions().status().code(), ErrorCode::Malformed);
    {
        RawDb raw(path);
        ASSERT_EQ(raw.exec("PRAGMA ignore_check_constraints = ON;"
                           "UPDATE messages SET role = 'robot'"),
                  SQLITE_OK);
    }
    auto msgs = store->loadMessages(s);
    EXPECT_EQ(msgs.status().code(), ErrorCode::Malformed);
    EXPECT_NE(msgs.status().message().find("robot"), std::string::npos);
}

TEST_F(Sessions, TheSchemaRefusesWhatTheApiNeverWrites) {
    const int64_t s = newSession();
    RawDb raw(path);
    ASSERT_EQ(raw.exec("PRAGMA foreign_keys = ON"), SQLITE_OK);
    const std::string sid = std::to_string(s);
    for (const std::string& sql : std::vector<std::string>{
             "INSERT INTO messages(session, position, role, text, created) VALUES(" + sid +
                 ", 0, 'robot', '', 0)",
             "INSERT INTO messages(session, position, role, text, created, stop_reason) VALUES(" +
                 sid + ", 0, 'user', '', 0, 'tired')",
             "INSERT INTO messages(session, position, role, text, created, sampling) VALUES(" +
                 sid + ", 0, 'user', '', 0, 'not json')",
             "INSERT INTO messages(session, position, role, text, created) VALUES(" + sid +
                 ", -1, 'user', '', 0)",
             "INSERT INTO messages(session, position, role, text, created) VALUES(9999, 0, 'user', "
             "'', 0)",
             "UPDATE sessions SET sampling = '[1, 2]'"}) {
        std::string err;
        EXPECT_NE(raw.exec(sql, &err), SQLITE_OK) << sql;
    }
}
