#pragma once
// Shared assertions for the io tests.
#include "core/status.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace st_test {

// Checks the status has `code` and its message contains every one of `parts`.
inline ::testing::AssertionResult hasError(const coli::Status& s, coli::ErrorCode code,
                                           std::initializer_list<std::string> parts) {
    if (s.isOk()) return ::testing::AssertionFailure() << "expected an error, got OK";
    if (s.code() != code) {
        return ::testing::AssertionFailure()
               << "expected " << coli::errorCodeName(code) << ", got " << s.toString();
    }
    for (const std::string& p : parts) {
        if (s.message().find(p) == std::string::npos)
            return ::testing::AssertionFailure() << "message lacks '" << p << "': " << s.message();
    }
    return ::testing::AssertionSuccess();
}

} // namespace st_test
