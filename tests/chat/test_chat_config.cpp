// Loading chat templates from tokenizer_config.json: the accepted shapes and the refusals.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using coli::ChatTemplate;
using coli::ErrorCode;

fs::path writeConfig(const std::string& dirName, const std::string& json) {
    fs::path dir = fs::path(COLI_BINARY_DIR) / "chat_config_tests" / dirName;
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "tokenizer_config.json", std::ios::binary) << json;
    return dir / "tokenizer_config.json";
}

TEST(ChatConfig, MissingFileIsNotFound) {
    auto r = ChatTemplate::fromTokenizerConfig("/nonexistent/dir/tokenizer_config.json");
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::NotFound);
    EXPECT_NE(r.status().message().find("/nonexistent/dir/tokenizer_config.json"),
              std::string::npos);
}

TEST(ChatConfig, MissingChatTemplateKeyIsNotFoundNamingTheFile) {
    fs::path p = writeConfig("nokey", R"({"bos_token": "<s>", "eos_token": "</s>"})");
    auto r = ChatTemplate::fromTokenizerConfig(p.string());
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::NotFound);
    EXPECT_NE(r.status().message().find(p.string()), std::string::npos);
    EXPECT_NE(r.status().message().find("chat_template"), std::string::npos);
}

TEST(ChatConfig, SideFileChatTemplateJinjaIsUsedWhenKeyMissing) {
    fs::path p = writeConfig("sidefile", R"({"eos_token": "</s>"})");
    std::ofstream(p.parent_path() / "chat_template.jinja", std::ios::binary)
        << "{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}\n";
    auto r = ChatTemplate::fromTokenizerConfig(p.string());
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    auto out = r.value()->render({{"user", "hi"}}, false);
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    EXPECT_EQ(out.value(), "[user]hi</s>");
}

TEST(ChatConfig, InvalidJsonIsMalformed) {
    fs::path p = writeConfig("badjson", R"({"chat_template": "x",)");
    auto r = ChatTemplate::fromTokenizerConfig(p.string());
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Malformed);
    EXPECT_NE(r.status().message().find(p.string()), std::string::npos);
}

TEST(ChatConfig, WrongTypesAreMalformed) {
    for (const char* json : {R"({"chat_template": 5})", R"({"chat_template": "x", "bos_token": 1})",
                             R"({"chat_template": [{"name": "default"}]})", R"([1, 2])"}) {
        SCOPED_TRACE(json);
        auto r = ChatTemplate::fromTokenizerConfig(writeConfig("types", json).string());
        ASSERT_FALSE(r.isOk());
        EXPECT_EQ(r.status().code(), ErrorCode::Malformed) << r.status().toString();
    }
}

TEST(ChatConfig, NamedTemplateListUsesDefault) {
    fs::path p = writeConfig("list", R"({
        "chat_template": [{"name": "tool_use", "template": "TOOLS"},
                          {"name": "default", "template": "{{ bos_token }}DEFAULT"}],
        "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
        "eos_token": {"content": "</s>"}})");
    auto r = ChatTemplate::fromTokenizerConfig(p.string());
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r.value()->bosToken(), "<s>");
    EXPECT_EQ(r.value()->eosToken(), "</s>");
    auto out = r.value()->render({{"user", "x"}}, true);
    ASSERT_TRUE(out.isOk());
    EXPECT_EQ(out.value(), "<s>DEFAULT");

    fs::path q =
        writeConfig("list_nodefault", R"({"chat_template": [{"name": "rag", "template": "x"}]})");
    auto r2 = ChatTemplate::fromTokenizerConfig(q.string());
    ASSERT_FALSE(r2.isOk());
    EXPECT_EQ(r2.status().code(), ErrorCode::NotFound);
    EXPECT_NE(r2.status().message().find("default"), std::string::npos);
}

TEST(ChatConfig, NullBosTokenIsUndefinedInTheTemplate) {
    fs::path p = writeConfig("nullbos", R"({"chat_template":
        "{{ bos_token is defined }}|{{ bos_token }}|{{ eos_token }}", "bos_token": null,
        "eos_token": "<|im_end|>"})");
    auto r = ChatTemplate::fromTokenizerConfig(p.string());
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    auto out = r.value()->render({}, false);
    ASSERT_TRUE(out.isOk());
    EXPECT_EQ(out.value(), "False||<|im_end|>");
}

TEST(ChatConfig, OtherSpecialTokensArePassedLikeTransformers) {
    fs::path p = writeConfig("special", R"({"chat_template":
        "{{ pad_token }}|{{ unk_token }}|{{ additional_special_tokens|join(',') }}|{{ sep_token is defined }}|{{ mask_token is defined }}",
        "pad_token": "<pad>", "unk_token": {"content": "<unk>"}, "sep_token": null,
        "mask_token": "", "additional_special_tokens": ["<a>", {"content": "<b>"}]})");
    auto r = ChatTemplate::fromTokenizerConfig(p.string());
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    auto out = r.value()->render({}, false);
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    EXPECT_EQ(out.value(), "<pad>|<unk>|<a>,<b>|False|False");

    fs::path bad = writeConfig("special_bad", R"({"chat_template": "x",
        "additional_special_tokens": [5]})");
    auto r2 = ChatTemplate::fromTokenizerConfig(bad.string());
    ASSERT_FALSE(r2.isOk());
    EXPECT_EQ(r2.status().code(), ErrorCode::Malformed);
    EXPECT_NE(r2.status().message().find("additional_special_tokens"), std::string::npos);
}

TEST(ChatConfig, SyntaxErrorIsMalformedWithLineColumn) {
    fs::path p = writeConfig("syntax", R"({"chat_template": "{% for m in messages %}\n{{ m. }}"})");
    auto r = ChatTemplate::fromTokenizerConfig(p.string());
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Malformed);
    EXPECT_NE(r.status().message().find(p.string() + ":2:7:"), std::string::npos)
        << r.status().message();
}

TEST(ChatConfig, UnknownFilterIsUnsupportedNamingIt) {
    auto r = ChatTemplate::fromString("{{ messages | sort(attribute='content') | join }}", "", "",
                                      "custom.jinja");
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Unsupported);
    EXPECT_NE(r.status().message().find("filter 'sort'"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("custom.jinja:1:15"), std::string::npos)
        << r.status().message();
}

TEST(ChatConfig, RaiseExceptionSurfacesTheMessage) {
    auto r = ChatTemplate::fromString(
        "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) "
        "%}{{ raise_exception('Conversation roles must alternate "
        "user/assistant/user/assistant/...') "
        "}}{% endif %}{{ message['content'] }}{% endfor %}",
        "<s>", "</s>", "mixtral_2023.jinja");
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    auto out = r.value()->render({{"user", "a"}, {"user", "b"}}, true);
    ASSERT_FALSE(out.isOk());
    EXPECT_EQ(out.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(out.status().message().find(
                  "Conversation roles must alternate user/assistant/user/assistant/..."),
              std::string::npos)
        << out.status().message();
    EXPECT_NE(out.status().message().find("mixtral_2023.jinja:1:"), std::string::npos);
    auto fine = r.value()->render({{"user", "a"}, {"assistant", "b"}}, true);
    ASSERT_TRUE(fine.isOk());
    EXPECT_EQ(fine.value(), "ab");
}

TEST(ChatConfig, RenderIsConstAndRepeatable) {
    auto r = ChatTemplate::fromString(
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}"
        "{{ ns.n }}",
        "", "", "count.jinja");
    ASSERT_TRUE(r.isOk());
    for (int i = 0; i < 3; ++i) {
        auto out = r.value()->render({{"user", "a"}, {"assistant", "b"}}, false);
        ASSERT_TRUE(out.isOk());
        EXPECT_EQ(out.value(), "2"); // namespace state does not leak between renders
    }
}

} // namespace
