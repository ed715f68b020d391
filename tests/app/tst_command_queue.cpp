// CommandQueue: FIFO delivery, Cancel and Quit semantics.
#include "command_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace coli::app;
using namespace std::chrono_literals;

static Command make(CommandKind k, uint64_t id) {
    Command c{k};
    c.id = id;
    return c;
}

TEST(CommandQueue, FifoOrder) {
    CommandQueue q;
    q.push(make(CommandKind::Load, 1));
    q.push(make(CommandKind::Generate, 2));
    q.push(make(CommandKind::Reset, 3));
    EXPECT_EQ(q.pop().id, 1u);
    EXPECT_EQ(q.pop().id, 2u);
    EXPECT_EQ(q.pop().id, 3u);
    EXPECT_FALSE(q.popFor(10ms).has_value());
}

TEST(CommandQueue, CancelFlagsRunningAndQueuedAndDropsQueuedGenerates) {
    CommandQueue q;
    q.push(make(CommandKind::Generate, 1));
    Command running = q.pop();
    Command g2 = make(CommandKind::Generate, 2);
    Command l3 = make(CommandKind::Load, 3);
    auto g2flag = g2.cancel, l3flag = l3.cancel;
    q.push(std::move(g2));
    q.push(std::move(l3));
    q.push(Command{CommandKind::Cancel});
    EXPECT_TRUE(running.cancel->load());
    EXPECT_TRUE(g2flag->load());
    EXPECT_TRUE(l3flag->load());
    ASSERT_EQ(q.size(), 1u); // the Generate is gone, the Load stays, Cancel is not delivered
    EXPECT_EQ(q.pop().kind, CommandKind::Load);
}

TEST(CommandQueue, QuitJumpsTheQueueAndCancels) {
    CommandQueue q;
    q.push(make(CommandKind::Load, 1));
    Command running = q.pop();
    q.push(make(CommandKind::Generate, 2));
    q.push(make(CommandKind::Quit, 3));
    EXPECT_TRUE(running.cancel->load());
    EXPECT_EQ(q.size(), 1u);
    EXPECT_EQ(q.pop().kind, CommandKind::Quit);
}

TEST(CommandQueue, QuitKeepsTheKvFileCommandsAheadOfIt) {
    // A chat's KV file bound to its id or deleted with the chat is quick file work: Quit runs it
    // first instead of leaving a chat's KV cache unsaved or a deleted chat's on disk.
    CommandQueue q;
    q.push(make(CommandKind::Generate, 1));
    Command running = q.pop();
    q.push(make(CommandKind::SessionKvBind, 2));
    q.push(make(CommandKind::Generate, 3));
    q.push(make(CommandKind::SessionKvDelete, 4));
    q.push(make(CommandKind::Load, 5));
    q.push(make(CommandKind::Quit, 6));
    q.push(make(CommandKind::Quit, 7)); // quit() twice: one Quit, still after them
    EXPECT_TRUE(running.cancel->load());
    ASSERT_EQ(q.size(), 3u);
    EXPECT_EQ(q.pop().id, 2u);
    EXPECT_EQ(q.pop().id, 4u);
    EXPECT_EQ(q.pop().kind, CommandKind::Quit);
}

TEST(CommandQueue, PopBlocksUntilPush) {
    CommandQueue q;
    std::thread t([&] {
        std::this_thread::sleep_for(50ms);
        q.push(make(CommandKind::Reset, 7));
    });
    const auto t0 = std::chrono::steady_clock::now();
    Command c = q.pop();
    t.join();
    EXPECT_EQ(c.id, 7u);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 40ms);
}
