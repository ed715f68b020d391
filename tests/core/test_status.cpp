#include "core/status.h"

#include <gtest/gtest.h>

using namespace coli;

TEST(Status, OkByDefault) {
    Status s;
    EXPECT_TRUE(s.isOk());
    EXPECT_EQ(s.toString(), "");
}

TEST(Status, CarriesCodeAndMessage) {
    Status s(ErrorCode::Malformed, "a.safetensors: bad header");
    EXPECT_FALSE(s.isOk());
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_EQ(s.toString(), "Malformed: a.safetensors: bad header");
}

TEST(Result, ValueOrStatus) {
    Result<int> good(7);
    ASSERT_TRUE(good.isOk());
    EXPECT_EQ(good.value(), 7);
    Result<int> bad(ErrorCode::NotFound, "config.json: missing");
    EXPECT_FALSE(bad.isOk());
    EXPECT_EQ(bad.status().code(), ErrorCode::NotFound);
}

static Status failing() {
    return {ErrorCode::Io, "x"};
}
static Status propagate() {
    COLI_RETURN_IF_ERROR(failing());
    return {};
}

TEST(Status, MacroPropagates) {
    EXPECT_EQ(propagate().code(), ErrorCode::Io);
}
