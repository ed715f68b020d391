#include "core/strings.h"

#include <gtest/gtest.h>

using namespace coli;

TEST(ReplaceAll, ReplacesEveryNonOverlappingOccurrence) {
    std::string s = "a b  c";
    replaceAll(s, " ", "\xe2\x96\x81"); // U+2581, as SentencePiece normalizers do
    EXPECT_EQ(s, "a\xe2\x96\x81"
                 "b\xe2\x96\x81\xe2\x96\x81"
                 "c");
    std::string t = "aaaa";
    replaceAll(t, "aa", "a"); // left to right, inserted text is not rescanned
    EXPECT_EQ(t, "aa");
}

TEST(ReplaceAll, EmptyPatternAndNoHitLeaveInputUnchanged) {
    std::string s = "hello";
    replaceAll(s, "", "x");
    EXPECT_EQ(s, "hello");
    replaceAll(s, "z", "x");
    EXPECT_EQ(s, "hello");
}

TEST(AppendUtf8, EncodesEachLengthClass) {
    std::string out;
    appendUtf8(out, U'A');          // 1 byte
    appendUtf8(out, U'\u00e9');     // 2 bytes
    appendUtf8(out, U'\u20ac');     // 3 bytes
    appendUtf8(out, U'\U0001F600'); // 4 bytes
    EXPECT_EQ(out, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST(AppendUtf8, BoundaryCodePoints) {
    std::string out;
    appendUtf8(out, 0x7F);
    appendUtf8(out, 0x80);
    appendUtf8(out, 0x7FF);
    appendUtf8(out, 0x800);
    appendUtf8(out, 0xFFFF);
    appendUtf8(out, 0x10000);
    appendUtf8(out, 0x10FFFF);
    EXPECT_EQ(out, "\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
}

TEST(AsciiLower, LowersAsciiLettersOnly) {
    EXPECT_EQ(asciiLower("Content-Range: BYTES"), "content-range: bytes");
    EXPECT_EQ(asciiLower("\xC3\x84pfel"), "\xC3\x84pfel"); // UTF-8 bytes untouched
    EXPECT_EQ(asciiLower(""), "");
}

TEST(TrimAscii, DropsSpacesTabsAndLineEndsAtBothEnds) {
    EXPECT_EQ(trimAscii(" \t\"etag\"\r\n"), "\"etag\"");
    EXPECT_EQ(trimAscii("a b"), "a b");
    EXPECT_EQ(trimAscii(" \r\n\t "), "");
}

TEST(HexLower, TwoLowerCaseDigitsPerByte) {
    const unsigned char bytes[] = {0x00, 0x0f, 0xa5, 0xff};
    EXPECT_EQ(hexLower(bytes, 4), "000fa5ff");
    EXPECT_EQ(hexLower(bytes, 0), "");
}
