// fitChatToContext (runtime/context_fit.h) on the shipped default model, whose 512-token context
// a chat fills after a few turns: the oldest exchanges are left out of the prompt, the system
// message and the last message are kept, and the prompt is the longest that fits. Cancel stops
// the fitting, also in the middle of a slow template render.
#include "runtime/context_fit.h"
#include "runtime/session.h"
#include "shipped_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

namespace coli {
namespace {

class ContextFitTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { s_model = test::shippedModel(); }
    void SetUp() override { ASSERT_NE(s_model, nullptr); }
    static std::vector<int32_t> encodeAll(const std::vector<ChatMessage>& m) {
        auto text = s_model->renderChat(m, true);
        EXPECT_TRUE(text.isOk());
        return s_model->tokenizer().encode(text.value(), false);
    }
    // A conversation: system message, then n exchanges of ~60-token messages, then a question.
    static std::vector<ChatMessage> conversation(int n) {
        std::vector<ChatMessage> m = {{"system", "You answer with fortunes."}};
        for (int i = 0; i < n; ++i) {
            m.push_back({"user", "Tell me fortune number " + std::to_string(i) +
                                     ", a long one about the sea, the wind and the stars."});
            m.push_back({"assistant", "The sea is wide and the wind is strong; the stars are "
                                      "far and the night is long. Number " +
                                          std::to_string(i) + " says: sail on."});
        }
        m.push_back({"user", "And the last one?"});
        return m;
    }
    static inline LoadedModel* s_model = nullptr;
};

TEST_F(ContextFitTest, ShortConversationIsUnchanged) {
    const auto m = conversation(2);
    auto r = fitChatToContext(*s_model, m, 256);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r.value().droppedMessages, 0);
    EXPECT_EQ(r.value().ids, encodeAll(m));
    EXPECT_EQ(r.value().contextTokens, s_model->model().config().maxPositions);
}

TEST_F(ContextFitTest, LongConversationDropsTheOldestExchangesOnly) {
    const auto m = conversation(40);
    const int ctx = s_model->model().config().maxPositions;
    ASSERT_GT(int(encodeAll(m).size()), ctx) << "the test conversation must overflow";
    const int reserve = 200;
    auto r = fitChatToContext(*s_model, m, reserve);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    const FittedPrompt& f = r.value();
    EXPECT_GT(f.droppedMessages, 0);
    EXPECT_EQ(f.droppedMessages % 2, 0) << "whole exchanges are dropped";
    EXPECT_LE(int(f.ids.size()) + reserve, ctx);
    // It is exactly the system message + the newest messages...
    std::vector<ChatMessage> kept = {m.front()};
    kept.insert(kept.end(), m.begin() + 1 + f.droppedMessages, m.end());
    EXPECT_EQ(f.ids, encodeAll(kept));
    // ...and the longest such prompt: keeping one more exchange would not fit.
    std::vector<ChatMessage> more = {m.front()};
    more.insert(more.end(), m.begin() + 1 + f.droppedMessages - 2, m.end());
    EXPECT_GT(int(encodeAll(more).size()) + reserve, ctx);
}

TEST_F(ContextFitTest, TooLongLastMessageIsRefusedWithCounts) {
    std::string huge;
    for (int i = 0; i < 600; ++i)
        huge += "lantern ";
    auto r =
        fitChatToContext(*s_model, {{"user", "hello"}, {"assistant", "hi"}, {"user", huge}}, 100);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(r.status().message().find("too long for the model's context"), std::string::npos)
        << r.status().message();
    auto single = fitChatToContext(*s_model, {{"user", huge}}, 100);
    ASSERT_FALSE(single.isOk());
    EXPECT_FALSE(fitChatToContext(*s_model, {}, 100).isOk());
}

TEST_F(ContextFitTest, HugeReserveIsClampedToHalfTheContext) {
    const auto m = conversation(40);
    auto r = fitChatToContext(*s_model, m, 1 << 30);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_LE(int(r.value().ids.size()), s_model->model().config().maxPositions / 2);
    EXPECT_GT(int(r.value().ids.size()), 0);
}

TEST_F(ContextFitTest, CancelledBeforeStartRendersNothing) {
    std::atomic<bool> cancel{true};
    auto r = fitChatToContext(*s_model, conversation(40), 200, &cancel);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Cancelled) << r.status().toString();
}

// A copy of the shipped model whose template takes a second or more (nested loops until the
// operation budget runs out): cancel from another thread ends fitChatToContext within a second.
TEST_F(ContextFitTest, CancelStopsASlowTemplateRender) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(COLI_BINARY_DIR) / "context_fit_slow_template";
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(COLI_SHIPPED_MODEL_DIR))
        fs::copy(e.path(), dir / e.path().filename());
    nlohmann::json cfg;
    std::ifstream(dir / "tokenizer_config.json") >> cfg;
    cfg["chat_template"] = "{% for i in range(100000) %}{% for j in range(100000) %}"
                           "{% endfor %}{% endfor %}done";
    std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
    auto lm = LoadedModel::load(dir.string(), ModelLoadOptions{});
    ASSERT_TRUE(lm.isOk()) << lm.status().toString();

    std::atomic<bool> cancel{false};
    std::chrono::steady_clock::time_point cancelledAt;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        cancelledAt = std::chrono::steady_clock::now();
        cancel.store(true);
    });
    auto r = fitChatToContext(*lm.value(), {{"user", "hi"}}, 100, &cancel);
    const auto returnedAt = std::chrono::steady_clock::now();
    canceller.join();
    ASSERT_FALSE(r.isOk()) << "the slow render finished before it was cancelled";
    EXPECT_EQ(r.status().code(), ErrorCode::Cancelled) << r.status().toString();
    // The latency is printed, not asserted: it depends on the machine's load.
    std::printf("[cancel] fitChatToContext returned %.1f ms after the flag was set\n",
                std::chrono::duration<double, std::milli>(returnedAt - cancelledAt).count());
}

} // namespace
} // namespace coli
