// core/number_text.h: whole-text parsing with ranges; nothing wraps or saturates.
#include "core/number_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace coli;

TEST(NumberText, Integers) {
    int64_t v = 7;
    EXPECT_EQ(parseInteger("42", 0, 100, &v), "");
    EXPECT_EQ(v, 42);
    EXPECT_EQ(parseInteger("-5", -10, 10, &v), "");
    EXPECT_EQ(v, -5);
    EXPECT_EQ(parseInteger("+3", 0, 10, &v), "");
    EXPECT_EQ(v, 3);
    EXPECT_EQ(parseInteger("abc", 0, 10, &v), "'abc' is not an integer");
    EXPECT_EQ(parseInteger("1.5", 0, 10, &v), "'1.5' is not an integer");
    EXPECT_EQ(parseInteger("", 0, 10, &v), "'' is not an integer");
    EXPECT_EQ(parseInteger(" 1", 0, 10, &v), "' 1' is not an integer");
    EXPECT_EQ(parseInteger("-1", 0, 4096, &v), "-1 is out of range (0 to 4096)");
    EXPECT_EQ(parseInteger("99999999999999999999999999999999999999999999", 0, 4096, &v),
              "99999999999999999999999999999999999999999999 is out of range (0 to 4096)");
    EXPECT_EQ(v, 3); // untouched on error
}

TEST(NumberText, UnsignedCoversTheWhole64Bits) {
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    uint64_t v = 0;
    EXPECT_EQ(parseUnsigned("18446744073709551615", 0, max, &v), "");
    EXPECT_EQ(v, max);
    EXPECT_EQ(parseUnsigned("18446744073709551616", 0, max, &v),
              "18446744073709551616 is out of range (0 to 18446744073709551615)");
    EXPECT_EQ(parseUnsigned("-1", 0, max, &v), "-1 is out of range (0 to 18446744073709551615)");
    EXPECT_EQ(parseUnsigned("-0", 0, max, &v), "");
    EXPECT_EQ(v, 0u);
}

TEST(NumberText, Decimals) {
    const double inf = std::numeric_limits<double>::infinity();
    double v = 0;
    EXPECT_EQ(parseDecimal("0.5", 0, 1, &v), "");
    EXPECT_EQ(v, 0.5);
    EXPECT_EQ(parseDecimal("1e-3", -inf, inf, &v), "");
    EXPECT_EQ(v, 1e-3);
    EXPECT_EQ(parseDecimal("+2", -inf, inf, &v), "");
    EXPECT_EQ(v, 2);
    EXPECT_EQ(parseDecimal("61", 0, 60, &v), "61 is out of range (0 to 60)");
    EXPECT_EQ(parseDecimal("1e400", -inf, inf, &v), "1e400 is out of range (-inf to inf)");
    EXPECT_EQ(parseDecimal("nan", -inf, inf, &v), "'nan' is not a number");
    EXPECT_EQ(parseDecimal("inf", -inf, inf, &v), "'inf' is not a number");
    EXPECT_EQ(parseDecimal("0.5x", -inf, inf, &v), "'0.5x' is not a number");
    EXPECT_EQ(parseDecimal("", -inf, inf, &v), "'' is not a number");
}

TEST(NumberText, ByteSizes) {
    uint64_t v = 0;
    EXPECT_EQ(parseByteSize("1500000", &v), "");
    EXPECT_EQ(v, 1500000u);
    EXPECT_EQ(parseByteSize("512MiB", &v), "");
    EXPECT_EQ(v, uint64_t(512) << 20);
    EXPECT_EQ(parseByteSize("2 g", &v), "");
    EXPECT_EQ(v, uint64_t(2) << 30);
    EXPECT_EQ(parseByteSize("3KB", &v), "");
    EXPECT_EQ(v, 3u * 1024);
    EXPECT_EQ(parseByteSize("15EiB", &v), "");
    EXPECT_EQ(v, uint64_t(15) << 60);
    EXPECT_EQ(parseByteSize("0", &v), "");
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(parseByteSize("-1GiB", &v), "-1GiB: a size cannot be negative");
    EXPECT_EQ(parseByteSize("16EiB", &v),
              "16EiB is out of range (at most 18446744073709551615 bytes)");
    EXPECT_EQ(parseByteSize("18446744073709551616", &v),
              "18446744073709551616 is out of range (at most 18446744073709551615 bytes)");
    EXPECT_EQ(parseByteSize("99999999999999999999999999999999999999TiB", &v).find("out of range") !=
                  std::string::npos,
              true);
    EXPECT_NE(parseByteSize("12XB", &v).find("'12XB' is not a size"), std::string::npos);
    EXPECT_NE(parseByteSize("1.5GiB", &v).find("is not a size"), std::string::npos);
    EXPECT_NE(parseByteSize("GiB", &v).find("is not a size"), std::string::npos);
}
