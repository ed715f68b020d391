// StopMatcher: text that could start a stop string is held back; a stop string is never shown,
// even split across pushes; everything else comes out unchanged and in order.
#include "runtime/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using coli::StopMatcher;

namespace {

// Feeds pieces, returns (everything shown, stopped).
std::pair<std::string, bool> run(std::vector<std::string> stops,
                                 const std::vector<std::string>& pieces) {
    StopMatcher m(std::move(stops));
    std::string shown;
    for (const auto& p : pieces) {
        auto o = m.push(p);
        shown += o.text;
        if (o.stopped) return {shown, true};
    }
    auto o = m.finish();
    return {shown + o.text, o.stopped};
}

} // namespace

TEST(StopMatcher, NoStopsPassesEverythingThroughAtOnce) {
    StopMatcher m({});
    EXPECT_EQ(m.push("Hello").text, "Hello");
    EXPECT_EQ(m.push(" world").text, " world");
    EXPECT_EQ(m.finish().text, "");
}

TEST(StopMatcher, HoldsBackAPossibleStart) {
    StopMatcher m({"\nUser:"});
    auto o = m.push("Hello\nUs");
    EXPECT_EQ(o.text, "Hello");
    EXPECT_FALSE(o.stopped);
    o = m.push("ual"); // "\nUsual" is not the stop string: released
    EXPECT_EQ(o.text, "\nUsual");
    EXPECT_FALSE(o.stopped);
}

TEST(StopMatcher, StopSplitAcrossPiecesIsNeverShown) {
    auto [shown, stopped] = run({"STOP"}, {"abc S", "T", "O", "P tail"});
    EXPECT_TRUE(stopped);
    EXPECT_EQ(shown, "abc ");
}

TEST(StopMatcher, StopInsideOnePiece) {
    auto [shown, stopped] = run({"</s>"}, {"one two</s>three"});
    EXPECT_TRUE(stopped);
    EXPECT_EQ(shown, "one two");
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
    auto [shown, stopped] = run({"world", "lo w"}, {"hello world"});
    EXPECT_TRUE(stopped);
    EXPECT_EQ(shown, "hel");
}

TEST(StopMatcher, FinishReleasesAHeldPrefix) {
    auto [shown, stopped] = run({"STOP"}, {"text ST"});
    EXPECT_FALSE(stopped);
    EXPECT_EQ(shown, "text ST");
}

TEST(StopMatcher, OverlappingPrefixesDoNotLoseText) {
    // "aab" must be found in "aaab" even though the first 'a' looked like a start.
    auto [shown, stopped] = run({"aab"}, {"a", "a", "a", "b", "c"});
    EXPECT_TRUE(stopped);
    EXPECT_EQ(shown, "a");
}

TEST(StopMatcher, NothingAfterStop) {
    StopMatcher m({"x"});
    EXPECT_TRUE(m.push("ax").stopped);
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(m.push("more").text, "");
    EXPECT_EQ(m.finish().text, "");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
    auto [shown, stopped] = run({""}, {"abc"});
    EXPECT_FALSE(stopped);
    EXPECT_EQ(shown, "abc");
}

TEST(StopMatcher, MultibyteStopAndText) {
    // "终" (e7 bb 88) arrives split in two; it is held as a possible start of "终了", then
    // released when the next piece shows it is not; the second "终" starts the stop string.
    auto [shown, stopped] = run({"终了"}, {"日本語", "\xe7\xbb", "\x88", "终", "了!"});
    EXPECT_TRUE(stopped);
    EXPECT_EQ(shown, "日本語\xe7\xbb\x88");
}
