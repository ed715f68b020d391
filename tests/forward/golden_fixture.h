#pragma once
// Test helper: loads a generated fixture checkpoint (tests/fixtures/gen_fixtures.py) and its
// golden.json (logits of the independent PyTorch reference, never of our engine).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace coli::test {

inline const std::vector<std::string>& fixtureNames() {
    // Every fixture the engine loads (deepseekv3fp8 is FP8: only the converter reads it).
    static const std::vector<std::string> names = {
        "olmoe", "qwen2moe", "qwen3moe", "mixtral", "granitemoe", "deepseekv2", "deepseekv3"};
    return names;
}

inline std::string fixtureDir(const std::string& name) {
    return std::string(COLI_FIXTURE_DIR) + "/" + name;
}

struct Golden {
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::vector<std::vector<float>>> logits; // [prompt][position][vocab]
    std::vector<int32_t> greedyPrompt;
    std::vector<int32_t> greedyTokens;
    std::vector<std::vector<float>> greedyLogits; // [step][vocab]
    double minMargin = 0;
};

// False when the file is missing or unreadable.
inline bool loadGolden(const std::string& name, Golden* g) {
    std::ifstream in(fixtureDir(name) + "/golden.json");
    if (!in) return false;
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) return false;
    g->prompts = j.at("prompts").get<std::vector<std::vector<int32_t>>>();
    g->logits = j.at("logits").get<std::vector<std::vector<std::vector<float>>>>();
    const auto& gr = j.at("greedy");
    g->greedyPrompt = gr.at("prompt").get<std::vector<int32_t>>();
    g->greedyTokens = gr.at("tokens").get<std::vector<int32_t>>();
    g->greedyLogits = gr.at("logits").get<std::vector<std::vector<float>>>();
    g->minMargin = gr.at("min_margin").get<double>();
    return true;
}

inline int argmax(const float* x, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return best;
}

inline double maxAbsDiff(const float* a, const float* b, int n) {
    double m = 0;
    for (int i = 0; i < n; ++i)
        m = std::max(m, std::abs(double(a[i]) - double(b[i])));
    return m;
}

} // namespace coli::test
