// Renders every published template in tests/chat/templates/ for every conversation in the
// goldens and compares byte for byte with what Python's jinja2 produced (tests/chat/gen_golden.py,
// transformers' settings). Templates are loaded through ChatTemplate::fromTokenizerConfig from a
// tokenizer_config.json written the way the model repositories store them.
#include "chat/chat_template.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const char* kTemplates[] = {"olmoe",        "qwen2moe",   "qwen3moe",   "mixtral",
                            "mixtral_2023", "granitemoe", "deepseekv2", "deepseekv3"};

class GoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenTest, MatchesJinja2ByteForByte) {
    const std::string name = GetParam();
    const fs::path src = fs::path(COLI_SOURCE_DIR) / "tests/chat";
    const fs::path goldenPath = src / "golden" / (name + ".json");
    ASSERT_TRUE(fs::exists(goldenPath)) << goldenPath;
    ojson golden = ojson::parse(readFile(goldenPath));
    const std::string templ = readFile(src / "templates" / (name + ".jinja"));
    ASSERT_FALSE(templ.empty());

    // A tokenizer_config.json as the model repository has it.
    const fs::path dir = fs::path(COLI_BINARY_DIR) / "chat_golden" / name;
    fs::create_directories(dir);
    ojson cfg;
    cfg["bos_token"] = golden["bos_token"];
    cfg["eos_token"] = golden["eos_token"];
    cfg["chat_template"] = templ;
    {
        std::ofstream out(dir / "tokenizer_config.json", std::ios::binary);
        out << cfg.dump(2);
    }
    auto ct = coli::ChatTemplate::fromTokenizerConfig((dir / "tokenizer_config.json").string());
    ASSERT_TRUE(ct.isOk()) << ct.status().toString();

    int checked = 0;
    for (const auto& c : golden["cases"]) {
        SCOPED_TRACE(name + " / " + c["name"].get<std::string>());
        std::vector<coli::ChatMessage> messages;
        for (const auto& m : c["messages"])
            messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
        std::optional<bool> thinking;
        if (c.contains("enable_thinking")) thinking = c["enable_thinking"].get<bool>();
        auto r = ct.value()->render(messages, c["add_generation_prompt"].get<bool>(), thinking);
        if (c.contains("expected")) {
            ASSERT_TRUE(r.isOk()) << r.status().toString();
            EXPECT_EQ(r.value(), c["expected"].get<std::string>());
        } else {
            const std::string kind = c["error"].get<std::string>();
            ASSERT_FALSE(r.isOk()) << "jinja2 failed with " << kind << " but we rendered:\n"
                                   << r.value();
            if (kind == "TemplateError") {
                // raise_exception(): the template's own message reaches the caller.
                EXPECT_EQ(r.status().code(), coli::ErrorCode::InvalidArgument);
                EXPECT_NE(r.status().message().find(c["message"].get<std::string>()),
                          std::string::npos)
                    << r.status().message();
            } else if (kind == "UndefinedError") {
                EXPECT_EQ(r.status().code(), coli::ErrorCode::InvalidArgument)
                    << r.status().toString();
            } else {
                EXPECT_EQ(r.status().code(), coli::ErrorCode::Malformed) << r.status().toString();
            }
            EXPECT_NE(r.status().message().find(ct.value()->sourceName()), std::string::npos);
        }
        ++checked;
    }
    EXPECT_GE(checked, 20);
}

INSTANTIATE_TEST_SUITE_P(Templates, GoldenTest, ::testing::ValuesIn(kTemplates),
                         [](const auto& info) { return std::string(info.param); });

} // namespace
