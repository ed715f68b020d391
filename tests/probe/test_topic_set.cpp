// Topic sets (engine/probe/topic_set.h): the shipped sets load; every malformed file is refused
// with the file and the problem named (malformed JSON, missing keys, empty topics, bad UTF-8).
#include "probe/topic_set.h"

#include <gtest/gtest.h>

using namespace coli;
using namespace coli::probe;

namespace {

const char* kGood = R"({"format": "colibri-topics", "version": 1, "name": "t",
  "description": "d",
  "topics": [{"id": "a", "label": "A", "source": "s", "prompts": ["one", "two"]},
             {"id": "b", "label": "B", "source": "s", "prompts": ["three"]}],
  "sources": [{"id": "s", "package": "p", "version": "1", "licence": "MIT",
               "files": "what was taken"}]})";

std::string refused(const std::string& text) {
    auto r = parseTopicSet(text, "topics.json");
    EXPECT_FALSE(r.isOk()) << text;
    if (r.isOk()) return "";
    EXPECT_EQ(r.status().code(), ErrorCode::Malformed);
    EXPECT_EQ(r.status().message().rfind("topics.json: ", 0), 0u) << r.status().message();
    return r.status().message();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
}

} // namespace

TEST(TopicSet, ParsesAValidSet) {
    auto r = parseTopicSet(kGood, "topics.json");
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->name, "t");
    EXPECT_EQ(r->description, "d");
    ASSERT_EQ(r->topics.size(), 2u);
    EXPECT_EQ(r->topics[0].id, "a");
    EXPECT_EQ(r->topics[0].label, "A");
    EXPECT_EQ(r->topics[0].source, "s");
    EXPECT_EQ(r->topics[0].prompts, (std::vector<std::string>{"one", "two"}));
    ASSERT_EQ(r->sources.size(), 1u);
    EXPECT_EQ(r->sources[0].licence, "MIT");
    EXPECT_EQ(r->sources[0].files, std::vector<std::string>{"what was taken"});
    EXPECT_EQ(r->sha256.size(), 64u);
    // The digest is of the bytes: another spelling of the same JSON is another file.
    EXPECT_NE(parseTopicSet(std::string(kGood) + "\n", "x")->sha256, r->sha256);
}

TEST(TopicSet, TheShippedSetsLoad) {
    for (const char* name : {"default-model.json", "general.json"}) {
        auto r = loadTopicSet(std::string(COLI_SOURCE_DIR) + "/resources/topics/" + name);
        ASSERT_TRUE(r.isOk()) << r.status().message();
        EXPECT_GE(r->topics.size(), 7u);
        for (const Topic& t : r->topics)
            EXPECT_GE(t.prompts.size(), 20u) << name << " " << t.id;
    }
}

TEST(TopicSet, MalformedJsonIsNamedWithItsPosition) {
    const std::string m = refused("{\"format\": \"colibri-topics\",\n \"version\": 1,, }");
    EXPECT_NE(m.find("not valid JSON"), std::string::npos) << m;
    EXPECT_NE(m.find("line 2"), std::string::npos) << m;
}

TEST(TopicSet, BadUtf8IsNamedWithItsOffset) {
    std::string text = kGood;
    text.insert(text.find("one") + 1, "\xC3\x28"); // a lead byte without its continuation
    const std::string m = refused(text);
    EXPECT_NE(m.find("not UTF-8"), std::string::npos) << m;
    EXPECT_NE(m.find("offset"), std::string::npos) << m;
    EXPECT_EQ(firstInvalidUtf8("\xED\xA0\x80"), 0u);                  // a surrogate
    EXPECT_EQ(firstInvalidUtf8("ab\xC0\xAF"), 2u);                    // an overlong '/'
    EXPECT_EQ(firstInvalidUtf8("\xF4\x90\x80\x80"), 0u);              // above U+10FFFF
    EXPECT_EQ(firstInvalidUtf8("z\xE2\x82\xAC\xF0\x9F\x90\xA6"), 8u); // valid: its size
}

TEST(TopicSet, MissingAndMistypedKeysAreNamed) {
    EXPECT_NE(refused(replaced(kGood, "\"format\": \"colibri-topics\",", "")).find("format"),
              std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "colibri-topics", "colibri-atlas")).find("colibri-topics"),
              std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "\"version\": 1", "\"version\": 2")).find("version"),
              std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "\"name\": \"t\",", "")).find(".name is missing"),
              std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "\"label\": \"A\",", "")).find(".topics[0].label is missing"),
              std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "\"id\": \"b\"", "\"id\": 7")).find(".topics[1].id is not"),
              std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "\"prompts\": [\"three\"]", "\"prompts\": \"three\""))
                  .find(".topics[1].prompts is not an array"),
              std::string::npos);
    EXPECT_NE(
        refused(replaced(kGood, "\"two\"", "2")).find(".topics[0].prompts[1] is not a string"),
        std::string::npos);
    EXPECT_NE(refused("[1, 2]").find("not a JSON object"), std::string::npos);
}

TEST(TopicSet, EmptyTopicsPromptsAndDuplicatesAreRefused) {
    EXPECT_NE(refused(replaced(kGood, "[\"three\"]", "[]")).find("topic \"b\""), std::string::npos);
    EXPECT_NE(
        refused(replaced(kGood, "\"three\"", "\"  \\n\"")).find(".topics[1].prompts[0] is empty"),
        std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "\"id\": \"b\"", "\"id\": \"a\"")).find("given twice"),
              std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "\"label\": \"B\"", "\"label\": \"\"")).find("is empty"),
              std::string::npos);
    const std::string noTopics = R"({"format": "colibri-topics", "version": 1, "name": "t",
        "topics": []})";
    EXPECT_NE(refused(noTopics).find(".topics is empty"), std::string::npos);
    EXPECT_NE(refused(replaced(kGood, "\"source\": \"s\", \"prompts\": [\"one\"",
                               "\"source\": \"nope\", \"prompts\": [\"one\""))
                  .find("\"nope\" is not the id"),
              std::string::npos);
}

TEST(TopicSet, MissingFileIsNamed) {
    auto r = loadTopicSet("/nonexistent/topics.json");
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::NotFound);
    EXPECT_NE(r.status().message().find("/nonexistent/topics.json"), std::string::npos);
}
