#pragma once
// Test helper: the shipped default model (resources/models/colibri-moe-tiny), loaded once per
// test process (f32, Fast path). COLI_SHIPPED_MODEL_DIR comes from CMake.
#include "runtime/session.h"

#include <gtest/gtest.h>

#include <memory>

namespace coli::test {

// nullptr (with a test failure naming the error) when the model cannot be loaded.
inline LoadedModel* shippedModel() {
    static std::unique_ptr<LoadedModel> model = [] {
        auto lm = LoadedModel::load(COLI_SHIPPED_MODEL_DIR, ModelLoadOptions{});
        EXPECT_TRUE(lm.isOk()) << COLI_SHIPPED_MODEL_DIR << ": " << lm.status().toString();
        return lm.isOk() ? std::move(lm.value()) : nullptr;
    }();
    return model.get();
}

} // namespace coli::test
