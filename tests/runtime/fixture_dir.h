#pragma once
// Helpers for tests that use the generated fixture checkpoints (tests/fixtures/gen_fixtures.py).
#include "runtime/session.h"

#include <nlohmann/json.hpp>

#include <string>

namespace coli::test {

// ${COLI_FIXTURE_DIR}/<name>
std::string fixturePath(const std::string& name);
// A fresh writable copy of a fixture under the build tree (for tests that damage files).
std::string copyFixture(const std::string& name, const std::string& tag);
nlohmann::json readJson(const std::string& path);
void writeText(const std::string& path, const std::string& text);
// Loads a fixture once per process (ASSERT-friendly: returns nullptr and sets *error on failure).
const LoadedModel* sharedModel(const std::string& name, std::string* error);

} // namespace coli::test
