// The engine on the shipped default model matches the torch model it was trained as: the golden
// file (tests/default_model/golden.json) holds tools/train/golden.py's outputs of the PyTorch
// MoEModel (tools/train/model.py) loaded from the same BF16 safetensors. Issue 3 asks for logits
// within 1e-3 and identical greedy tokens on 5 prompts.
#include "runtime/session.h"
#include "shipped_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>

namespace coli {
namespace {

struct GoldenCase {
    std::string kind; // "text" or "chat"
    std::string text;
    std::vector<int32_t> promptIds;
    std::vector<float> lastLogits;             // [vocab] at the last prompt position
    std::vector<int32_t> greedy;               // N greedy tokens, eos not special-cased
    std::vector<std::vector<int32_t>> topIds;  // [step][8]
    std::vector<std::vector<float>> topLogits; // [step][8]
};

class DefaultModelTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        std::ifstream in(COLI_DEFAULT_MODEL_GOLDEN);
        ASSERT_TRUE(in) << "cannot read " << COLI_DEFAULT_MODEL_GOLDEN;
        const auto j = nlohmann::json::parse(in);
        s_tolerance = j.at("tolerance").get<double>();
        for (const auto& c : j.at("cases")) {
            GoldenCase g;
            g.kind = c.at("kind");
            g.text = c.at("text");
            g.promptIds = c.at("prompt_ids").get<std::vector<int32_t>>();
            g.lastLogits = c.at("last_logits").get<std::vector<float>>();
            g.greedy = c.at("greedy").get<std::vector<int32_t>>();
            for (const auto& s : c.at("steps")) {
                g.topIds.push_back(s.at("top_ids").get<std::vector<int32_t>>());
                g.topLogits.push_back(s.at("top_logits").get<std::vector<float>>());
            }
            s_cases.push_back(std::move(g));
        }
        s_model = test::shippedModel();
    }
    static void TearDownTestSuite() { s_cases.clear(); }
    void SetUp() override {
        ASSERT_NE(s_model, nullptr);
        ASSERT_EQ(s_cases.size(), 5u) << "issue 3 asks for 5 prompts";
    }

    static inline LoadedModel* s_model = nullptr;
    static inline std::vector<GoldenCase> s_cases;
    static inline double s_tolerance = 0;
};

double maxAbsDiff(const float* a, const float* b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; ++i)
        m = std::max(m, std::abs(double(a[i]) - double(b[i])));
    return m;
}

TEST_F(DefaultModelTest, TokenizerAndChatTemplateGiveTheTorchPromptIds) {
    for (const auto& c : s_cases) {
        std::string text = c.text;
        if (c.kind == "chat") {
            auto r = s_model->renderChat({{"user", c.text}}, /*addGenerationPrompt=*/true);
            ASSERT_TRUE(r.isOk()) << r.status().toString();
            text = r.value();
        }
        EXPECT_EQ(s_model->tokenizer().encode(text), c.promptIds) << c.kind << " " << c.text;
    }
}

TEST_F(DefaultModelTest, LogitsAndGreedyTokensMatchTorchOnBothPaths) {
    Model& model = s_model->model();
    const int vocab = model.config().vocabSize;
    for (ForwardPath path : {ForwardPath::Reference, ForwardPath::Fast}) {
        model.setPath(path);
        double worst = 0;
        for (const auto& c : s_cases) {
            ASSERT_EQ(int(c.lastLogits.size()), vocab);
            KVCache kv;
            std::vector<float> logits;
            ASSERT_TRUE(model.forward(c.promptIds, kv, logits).isOk());
            ASSERT_EQ(int(logits.size()), vocab);
            const double d = maxAbsDiff(logits.data(), c.lastLogits.data(), vocab);
            EXPECT_LE(d, s_tolerance) << c.text;
            worst = std::max(worst, d);
            // Greedy decode through the KV cache; every step's top-8 logits compared too.
            for (size_t step = 0; step < c.greedy.size(); ++step) {
                const int best =
                    int(std::max_element(logits.begin(), logits.end()) - logits.begin());
                ASSERT_EQ(best, c.greedy[step]) << c.text << ": greedy token " << step;
                for (size_t k = 0; k < c.topIds[step].size(); ++k) {
                    const double dk =
                        std::abs(double(logits[c.topIds[step][k]]) - double(c.topLogits[step][k]));
                    EXPECT_LE(dk, s_tolerance) << c.text << " step " << step << " top " << k;
                    worst = std::max(worst, dk);
                }
                const int32_t next = c.greedy[step];
                ASSERT_TRUE(model.forward(std::span<const int32_t>(&next, 1), kv, logits).isOk());
            }
        }
        RecordProperty(path == ForwardPath::Fast ? "worst_diff_fast" : "worst_diff_reference",
                       std::to_string(worst));
        std::printf("%s path: max |logit - torch| = %.3g over %zu prompts\n",
                    path == ForwardPath::Fast ? "fast" : "reference", worst, s_cases.size());
    }
    model.setPath(ForwardPath::Fast);
}

// The runtime (Session, greedy sampler) produces the same tokens as the golden greedy decode.
TEST_F(DefaultModelTest, SessionGreedyGenerationMatchesTorch) {
    for (const auto& c : s_cases) {
        Session session(*s_model);
        GenerateParams p;
        p.maxNewTokens = int(c.greedy.size());
        p.sampler.temperature = 0;
        p.sampler.repeatPenalty = 1.0f;
        p.ignoreEos = true;
        auto r = session.generate(c.promptIds, p, [](std::string_view) {});
        ASSERT_TRUE(r.isOk()) << r.status().toString();
        EXPECT_EQ(r.value().generatedIds, c.greedy) << c.text;
    }
}

TEST_F(DefaultModelTest, ConfigIsTheTrainedArchitecture) {
    const auto& cfg = s_model->model().config();
    EXPECT_GE(cfg.nLayers, 6);
    EXPECT_GE(cfg.nExperts, 16);
    EXPECT_EQ(cfg.topK, 2);
    EXPECT_GE(cfg.maxPositions, 512) << "phase 2 trains at 512 tokens";
}

} // namespace
} // namespace coli
