// Fast tokenizer tests on small hand-written tokenizer.json files (no npm, no network).
// Expected ids below are worked out by hand from the merges/vocab written in each test.
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <random>
#include <thread>

namespace {

using coli::ErrorCode;
using coli::StreamDecoder;
using coli::Tokenizer;
using nlohmann::json;
using Ids = std::vector<int32_t>;

// GPT-2's byte -> printable code point table, written here independently of the engine
// (openai/gpt-2 encoder.py bytes_to_unicode).
std::string byteChar(int b) {
    int cp = b;
    if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
        int n = 0;
        for (int k = 0; k < b; ++k)
            if (!((k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF)))
                ++n;
        cp = 256 + n;
    }
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else {
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

std::unique_ptr<Tokenizer> load(const json& j) {
    auto r = Tokenizer::fromJson(j.dump(), "test.json");
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? std::move(r.value()) : nullptr;
}

std::string streamAll(const Tokenizer& tok, const Ids& ids,
                      std::vector<std::string>* pieces = nullptr, bool skip = false) {
    StreamDecoder s(tok, skip);
    std::string out;
    for (int32_t id : ids) {
        std::string p = s.push(id);
        if (pieces) pieces->push_back(p);
        out += p;
    }
    out += s.flush();
    return out;
}

// ---------------------------------------------------------------------------------------------
// Byte-level BPE (GPT-2 / Qwen style): ids 0..255 are the byte alphabet, in byte order.
// Extra tokens: 256 "he", 257 "ll", 258 "hell", 259 "hello", 260 "Ġw", 261 "Ġwo", 262 "bc",
// 263 "ab". Added: 300 "<|end|>" (special), 301 "<mask>" (lstrip + rstrip), 302 "[tool]".
json byteLevelJson(bool bcBeforeAb = true) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b)
        vocab[byteChar(b)] = b;
    vocab["he"] = 256;
    vocab["ll"] = 257;
    vocab["hell"] = 258;
    vocab["hello"] = 259;
    vocab["\xC4\xA0w"] = 260; // "Ġw"
    vocab["\xC4\xA0wo"] = 261;
    vocab["bc"] = 262;
    vocab["ab"] = 263;
    json merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "\xC4\xA0w o"};
    if (bcBeforeAb) {
        merges.push_back(json::array({"b", "c"}));
        merges.push_back(json::array({"a", "b"}));
    } else {
        merges.push_back(json::array({"a", "b"}));
        merges.push_back(json::array({"b", "c"}));
    }
    return {
        {"version", "1.0"},
        {"added_tokens",
         {{{"id", 300},
           {"content", "<|end|>"},
           {"special", true},
           {"lstrip", false},
           {"rstrip", false},
           {"normalized", false},
           {"single_word", false}},
          {{"id", 301},
           {"content", "<mask>"},
           {"special", true},
           {"lstrip", true},
           {"rstrip", true},
           {"normalized", false},
           {"single_word", false}},
          {{"id", 302},
           {"content", "[tool]"},
           {"special", false},
           {"lstrip", false},
           {"rstrip", false},
           {"normalized", true},
           {"single_word", false}}}},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
        {"post_processor", {{"type", "ByteLevel"}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model",
         {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", false}}},
    };
}

TEST(ByteLevelBpe, MergesByRank) {
    auto tok = load(byteLevelJson());
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("hello"), (Ids{259}));
    // " wo" is one GPT-2 pre-token: Ġ w -> Ġw, Ġw o -> Ġwo.
    EXPECT_EQ(tok->encode("hello wo"), (Ids{259, 261}));
    // "hel": h e -> he, then "l" stays (no "he l" merge).
    EXPECT_EQ(tok->encode("hel"), (Ids{256, 'l'}));
    // "abc": the lower-ranked merge wins, not the leftmost one.
    EXPECT_EQ(tok->encode("abc"), (Ids{'a', 262}));
    auto swapped = load(byteLevelJson(false));
    ASSERT_TRUE(swapped);
    EXPECT_EQ(swapped->encode("abc"), (Ids{263, 'c'}));
    EXPECT_EQ(tok->vocabSize(), 303);
    EXPECT_EQ(tok->tokenId("hello"), 259);
    EXPECT_EQ(tok->tokenId("<mask>"), 301);
    EXPECT_EQ(tok->tokenString(259), "hello");
    EXPECT_TRUE(tok->isSpecial(300));
    EXPECT_FALSE(tok->isSpecial(302));
    EXPECT_FALSE(tok->isSpecial(259));
}

TEST(ByteLevelBpe, SpacesAndControlBytesUseTheByteAlphabet) {
    auto tok = load(byteLevelJson());
    ASSERT_TRUE(tok);
    // GPT-2 regex: "a", "  " (\s+(?!\S) leaves the last space to the next word), " b".
    EXPECT_EQ(tok->encode("a   b"), (Ids{'a', ' ', ' ', ' ', 'b'}));
    EXPECT_EQ(tok->encode("\t\n"), (Ids{'\t', '\n'}));
    EXPECT_EQ(tok->decode(Ids{'a', ' ', ' ', ' ', 'b'}), "a   b");
}

TEST(ByteLevelBpe, AddedTokensWithStripFlags) {
    auto tok = load(byteLevelJson());
    ASSERT_TRUE(tok);
    // <|end|> has no strip flags: the spaces around it stay ordinary text.
    EXPECT_EQ(tok->encode("hello <|end|> hello"), (Ids{259, ' ', 300, ' ', 259}));
    // <mask> swallows the whitespace on both sides.
    EXPECT_EQ(tok->encode("hello \t <mask>  \n hello"), (Ids{259, 301, 259}));
    EXPECT_EQ(tok->encode("<|end|><|end|>"), (Ids{300, 300}));
    // Longest match wins; a partial special token is ordinary text.
    EXPECT_EQ(tok->encode("<|end"), (Ids{'<', '|', 'e', 'n', 'd'}));
    // A normalized added token is matched after normalization.
    EXPECT_EQ(tok->encode("hello[tool]hello"), (Ids{259, 302, 259}));
    // Decoding keeps specials verbatim unless asked to skip them.
    EXPECT_EQ(tok->decode(Ids{259, 300, 259}), "hello<|end|>hello");
    EXPECT_EQ(tok->decode(Ids{259, 300, 259}, true), "hellohello");
    EXPECT_EQ(tok->decode(Ids{259, 302}, true), "hello[tool]"); // not special: kept
    EXPECT_EQ(tok->encode("hello", true), (Ids{259}));          // ByteLevel adds nothing
}

TEST(ByteLevelBpe, SingleWordAddedToken) {
    json j = byteLevelJson();
    j["added_tokens"].push_back({{"id", 303},
                                 {"content", "cat"},
                                 {"special", false},
                                 {"single_word", true},
                                 {"normalized", false}});
    auto tok = load(j);
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("a cat"), (Ids{'a', ' ', 303}));
    EXPECT_EQ(tok->encode("cat."), (Ids{303, '.'}));
    // Inside a word it is ordinary text (no merges for these letters: one id per byte).
    EXPECT_EQ(tok->encode("concat"), (Ids{'c', 'o', 'n', 'c', 'a', 't'}));
    EXPECT_EQ(tok->encode("cats"), (Ids{'c', 'a', 't', 's'}));
}

TEST(ByteLevelBpe, NfcNormalizer) {
    auto tok = load(byteLevelJson());
    ASSERT_TRUE(tok);
    // "e" + COMBINING ACUTE composes to U+00E9 (bytes C3 A9) before byte-level mapping.
    EXPECT_EQ(tok->encode("e\xCC\x81"), (Ids{0xC3, 0xA9}));
    EXPECT_EQ(tok->encode("e\xCC\x81"), tok->encode("\xC3\xA9"));
}

TEST(ByteLevelBpe, InvalidUtf8BecomesReplacementCharacter) {
    auto tok = load(byteLevelJson());
    ASSERT_TRUE(tok);
    const Ids fffd = tok->encode("\xEF\xBF\xBD");
    EXPECT_EQ(fffd, (Ids{0xEF, 0xBF, 0xBD}));
    EXPECT_EQ(tok->encode(std::string("a\xFF"
                                      "b")),
              tok->encode("a\xEF\xBF\xBD"
                          "b"));
    // Truncated 4-byte sequence: one U+FFFD for the maximal subpart, then "x".
    EXPECT_EQ(tok->encode(std::string("\xF0\x9F\x98x")), tok->encode("\xEF\xBF\xBDx"));
    // Lone surrogate encoding: three U+FFFD.
    EXPECT_EQ(tok->encode(std::string("\xED\xA0\x80")),
              tok->encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
    // Embedded NUL is a character like any other.
    EXPECT_EQ(tok->encode(std::string("a\0b", 3)), (Ids{'a', 0, 'b'}));
}

TEST(ByteLevelBpe, StreamNeverEmitsPartialUtf8) {
    auto tok = load(byteLevelJson());
    ASSERT_TRUE(tok);
    const std::string emoji = "\xF0\x9F\x98\x80"; // U+1F600, no merges: four byte tokens
    const Ids ids = tok->encode("hi" + emoji + "!");
    ASSERT_EQ(ids, (Ids{'h', 'i', 0xF0, 0x9F, 0x98, 0x80, '!'}));
    std::vector<std::string> pieces;
    EXPECT_EQ(streamAll(*tok, ids, &pieces), tok->decode(ids));
    EXPECT_EQ(pieces, (std::vector<std::string>{"h", "i", "", "", "", emoji, "!"}));
    // A stream cut in the middle of the emoji: flush gives U+FFFD, as decode() does.
    const Ids cut{'a', 0xF0, 0x9F};
    EXPECT_EQ(tok->decode(cut), "a\xEF\xBF\xBD");
    EXPECT_EQ(streamAll(*tok, cut), tok->decode(cut));
    // Invalid byte sequences mid-stream come out as soon as they are known to be invalid.
    StreamDecoder s(*tok);
    EXPECT_EQ(s.push(0xF0), "");
    EXPECT_EQ(s.push('x'), "\xEF\xBF\xBDx");
    EXPECT_EQ(s.flush(), "");
    // Out-of-range ids decode to nothing and do not break the stream.
    EXPECT_EQ(tok->decode(Ids{-1, 'a', 100000}), "a");
    EXPECT_EQ(streamAll(*tok, Ids{-1, 'a', 100000}), "a");
}

TEST(ByteLevelBpe, ConcurrentEncodeIsConsistent) {
    auto tok = load(byteLevelJson());
    ASSERT_TRUE(tok);
    const std::string text = "hello wo <mask> abc hel \xF0\x9F\x98\x80 hello";
    const Ids want = tok->encode(text);
    std::vector<std::thread> threads;
    std::atomic<int> bad{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int k = 0; k < 200; ++k)
                if (tok->encode(text) != want) ++bad;
        });
    for (auto& th : threads)
        th.join();
    EXPECT_EQ(bad.load(), 0);
}

// ---------------------------------------------------------------------------------------------
// SentencePiece-style BPE (Llama 2 / Mistral): <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258,
// then 259 "▁", 260 "h", 261 "e", 262 "l", 263 "o", 264 "▁h", 265 "▁he", 266 "ll", 267 "▁hell",
// 268 "▁hello", 269 "w", 270 "▁w".
const std::string kMeta = "\xE2\x96\x81"; // U+2581

json spJson(bool withNormalizer = true) {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = 3 + b;
    }
    const std::vector<std::string> extra = {
        kMeta,           "h", "e",        "l", "o", kMeta + "h", kMeta + "he", "ll", kMeta + "hell",
        kMeta + "hello", "w", kMeta + "w"};
    for (size_t i = 0; i < extra.size(); ++i)
        vocab[extra[i]] = 259 + int(i);
    json merges = {kMeta + " h",    kMeta + "h e",    "l l",
                   kMeta + "he ll", kMeta + "hell o", kMeta + " w"};
    json j = {
        {"added_tokens",
         {{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}},
          {{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
          {{"id", 2}, {"content", "</s>"}, {"special", true}, {"normalized", false}}}},
        {"pre_tokenizer", nullptr},
        {"post_processor",
         {{"type", "TemplateProcessing"},
          {"single",
           {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Replace"}, {"pattern", {{"String", kMeta}}}, {"content", " "}},
            {{"type", "ByteFallback"}},
            {{"type", "Fuse"}},
            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
        {"model",
         {{"type", "BPE"},
          {"vocab", vocab},
          {"merges", merges},
          {"byte_fallback", true},
          {"unk_token", "<unk>"},
          {"fuse_unk", true}}},
    };
    if (withNormalizer) {
        j["normalizer"] = {
            {"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", kMeta}},
              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMeta}}}}};
    } else {
        j["normalizer"] = nullptr;
        j["pre_tokenizer"] = {{"type", "Metaspace"},
                              {"replacement", kMeta},
                              {"prepend_scheme", "first"},
                              {"split", true}};
    }
    return j;
}

TEST(SentencePieceBpe, PrependReplaceAndTemplate) {
    auto tok = load(spJson());
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("hello"), (Ids{268}));
    EXPECT_EQ(tok->encode("hello", true), (Ids{1, 268}));
    // No pre-tokenizer: the whole "▁hello▁w" is one piece.
    EXPECT_EQ(tok->encode("hello w"), (Ids{268, 270}));
    EXPECT_EQ(tok->decode(Ids{268, 270}), "hello w");
    EXPECT_EQ(tok->decode(Ids{1, 268}), "<s> hello");
    EXPECT_EQ(tok->decode(Ids{1, 268}, true), "hello");
    // The normalizer runs on each piece between added tokens: "▁" is prepended after </s> too.
    EXPECT_EQ(tok->encode("hello</s>hello"), (Ids{268, 2, 268}));
}

TEST(SentencePieceBpe, LongPiecesGiveTheSameIdsAsShortOnes) {
    auto tok = load(spJson());
    ASSERT_TRUE(tok);
    // Over 256 bytes the piece is cut before each "▁" that follows another character; the ids
    // must be those of the words taken one by one, runs of "▁" included.
    std::string text;
    Ids want;
    for (int i = 0; i < 60; ++i) {
        text += i == 0 ? "hello" : (i % 3 == 0 ? "  hello" : " hello");
        if (i > 0 && i % 3 == 0) want.push_back(259);
        want.push_back(268);
    }
    EXPECT_EQ(tok->encode(text), want);
    EXPECT_EQ(tok->decode(want), text);
}

TEST(SentencePieceBpe, ByteFallbackRoundTrip) {
    auto tok = load(spJson());
    ASSERT_TRUE(tok);
    // "é" (C3 A9) is not in the vocabulary: byte tokens 3 + 0xC3, 3 + 0xA9.
    EXPECT_EQ(tok->encode("h\xC3\xA9"), (Ids{264, 3 + 0xC3, 3 + 0xA9}));
    EXPECT_EQ(tok->decode(Ids{264, 3 + 0xC3, 3 + 0xA9}), "h\xC3\xA9");
    // Leading space of the decoded text is stripped once (Strip start=1), not a second space.
    EXPECT_EQ(tok->decode(Ids{259, 259, 260}), " h");
}

TEST(SentencePieceBpe, StreamEmojiAcrossByteTokens) {
    auto tok = load(spJson());
    ASSERT_TRUE(tok);
    const std::string emoji = "\xF0\x9F\x98\x80";
    const Ids ids = tok->encode(emoji);
    ASSERT_EQ(ids, (Ids{259, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80}));
    std::vector<std::string> pieces;
    EXPECT_EQ(streamAll(*tok, ids, &pieces), emoji);
    EXPECT_EQ(pieces, (std::vector<std::string>{"", "", "", "", emoji}));
    EXPECT_EQ(tok->decode(ids), emoji);
    // Cut after two bytes: decode and stream agree on one U+FFFD.
    const Ids cut{259, 3 + 0xF0, 3 + 0x9F};
    EXPECT_EQ(tok->decode(cut), "\xEF\xBF\xBD");
    EXPECT_EQ(streamAll(*tok, cut), tok->decode(cut));
}

TEST(SentencePieceBpe, MetaspacePreTokenizerFirstScheme) {
    auto tok = load(spJson(false));
    ASSERT_TRUE(tok);
    // Metaspace splits before each "▁": "▁hello", "▁w".
    EXPECT_EQ(tok->encode("hello w"), (Ids{268, 270}));
    // prepend_scheme "first": no "▁" for text that does not start the input.
    EXPECT_EQ(tok->encode("hello<s>hello"), (Ids{268, 1, 260, 261, 266, 263}));
}

TEST(SentencePieceBpe, UnknownCharactersFuseIntoOneUnk) {
    json j = spJson();
    j["model"]["byte_fallback"] = false;
    auto tok = load(j);
    ASSERT_TRUE(tok);
    // "▁h" then two unknown CJK characters fused into one <unk>.
    EXPECT_EQ(tok->encode("h\xE4\xB8\x80\xE4\xB8\x81"), (Ids{264, 0}));
}

// ---------------------------------------------------------------------------------------------
// Hostile input: random bytes and random ids never crash, decode always yields valid UTF-8, and
// streaming always matches decode().

TEST(TokenizerRobustness, RandomBytesAndIds) {
    auto bl = load(byteLevelJson());
    auto sp = load(spJson());
    ASSERT_TRUE(bl && sp);
    std::mt19937 rng(1234);
    for (const Tokenizer* tok : {bl.get(), sp.get()}) {
        for (int round = 0; round < 300; ++round) {
            std::string bytes(rng() % 48, '\0');
            for (char& c : bytes)
                c = static_cast<char>(rng() % 256);
            const Ids ids = tok->encode(bytes, round % 2 == 0);
            for (int32_t id : ids)
                EXPECT_TRUE(id >= 0 && id < tok->vocabSize());
            const std::string text = tok->decode(ids);
            EXPECT_EQ(coli::sanitizeUtf8(text), text);

            Ids random(rng() % 24);
            for (int32_t& id : random)
                id = static_cast<int32_t>(rng() % 320) - 10;
            for (bool skip : {false, true}) {
                const std::string d = tok->decode(random, skip);
                EXPECT_EQ(coli::sanitizeUtf8(d), d);
                std::vector<std::string> pieces;
                EXPECT_EQ(streamAll(*tok, random, &pieces, skip), d);
                for (const std::string& p : pieces)
                    EXPECT_EQ(coli::sanitizeUtf8(p), p);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Refusals.

coli::Status loadStatus(const std::string& text) {
    return Tokenizer::fromJson(text, "bad_tokenizer.json").status();
}

TEST(TokenizerErrors, MalformedNamesFileAndJsonPath) {
    coli::Status s = loadStatus("{ not json");
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_NE(s.message().find("bad_tokenizer.json"), std::string::npos) << s.message();

    json j = byteLevelJson();
    j["model"]["merges"][1] = 42;
    s = loadStatus(j.dump());
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_NE(s.message().find("bad_tokenizer.json: model.merges[1]"), std::string::npos)
        << s.message();

    j = byteLevelJson();
    j["model"]["merges"][0] = "h zz";
    s = loadStatus(j.dump());
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_NE(s.message().find("model.merges[0]"), std::string::npos) << s.message();

    j = byteLevelJson();
    j["model"]["vocab"]["he"] = "x";
    s = loadStatus(j.dump());
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_NE(s.message().find("model.vocab.he"), std::string::npos) << s.message();

    j = byteLevelJson();
    j["added_tokens"][1].erase("id");
    s = loadStatus(j.dump());
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_NE(s.message().find("added_tokens[1].id"), std::string::npos) << s.message();

    j = byteLevelJson();
    j["pre_tokenizer"] = {
        {"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
    s = loadStatus(j.dump());
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_NE(s.message().find("pre_tokenizer.pattern"), std::string::npos) << s.message();

    j = byteLevelJson();
    j.erase("model");
    s = loadStatus(j.dump());
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_NE(s.message().find("model"), std::string::npos) << s.message();

    s = loadStatus("[1, 2, 3]");
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
}

TEST(TokenizerErrors, UnsupportedNamesTheComponent) {
    for (const char* type : {"Unigram", "WordPiece", "WordLevel"}) {
        json j = byteLevelJson();
        j["model"]["type"] = type;
        coli::Status s = loadStatus(j.dump());
        EXPECT_EQ(s.code(), ErrorCode::Unsupported) << type;
        EXPECT_NE(s.message().find(type), std::string::npos) << s.message();
        EXPECT_NE(s.message().find("model.type"), std::string::npos) << s.message();
    }
    json j = byteLevelJson();
    j["normalizer"] = {{"type", "Lowercase"}};
    coli::Status s = loadStatus(j.dump());
    EXPECT_EQ(s.code(), ErrorCode::Unsupported);
    EXPECT_NE(s.message().find("Lowercase"), std::string::npos) << s.message();

    j = byteLevelJson();
    j["decoder"] = {{"type", "WordPiece"}};
    s = loadStatus(j.dump());
    EXPECT_EQ(s.code(), ErrorCode::Unsupported);
    EXPECT_NE(s.message().find("WordPiece"), std::string::npos) << s.message();

    j = byteLevelJson();
    j["model"]["dropout"] = 0.1;
    EXPECT_EQ(loadStatus(j.dump()).code(), ErrorCode::Unsupported);
}

TEST(TokenizerErrors, MissingFileIsNotFound) {
    auto r = Tokenizer::fromFile("/nonexistent/dir/tokenizer.json");
    EXPECT_EQ(r.status().code(), ErrorCode::NotFound);
    EXPECT_NE(r.status().message().find("/nonexistent/dir/tokenizer.json"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// UTF-8 replacement and regex translation.

TEST(SanitizeUtf8, MaximalSubpartRule) {
    const std::string R = "\xEF\xBF\xBD";
    EXPECT_EQ(coli::sanitizeUtf8("plain ascii"), "plain ascii");
    EXPECT_EQ(coli::sanitizeUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
    EXPECT_EQ(coli::sanitizeUtf8("\xFF"), R);
    EXPECT_EQ(coli::sanitizeUtf8("\xC3\x28"), R + "(");
    EXPECT_EQ(coli::sanitizeUtf8("\xE2\x82"), R);             // truncated: one U+FFFD
    EXPECT_EQ(coli::sanitizeUtf8("\xF0\x80\x80"), R + R + R); // F0 80 is never valid
    EXPECT_EQ(coli::sanitizeUtf8("\xED\xA0\x80"), R + R + R); // surrogate
    EXPECT_EQ(coli::sanitizeUtf8("\xF4\x90\x80\x80"), R + R + R + R);
    EXPECT_EQ(coli::sanitizeUtf8("\xC0\xAF"), R + R); // overlong
    EXPECT_EQ(coli::sanitizeUtf8("\xF0\x9F\x98x"), R + "x");
}

TEST(RegexTranslation, WhiteSpaceAndAsciiCaseFolding) {
    EXPECT_EQ(coli::translateOnigurumaPattern(R"(\s+(?!\S))"),
              R"(\p{White_Space}+(?!\P{White_Space}))");
    EXPECT_EQ(coli::translateOnigurumaPattern("(?i:'s|'ll)"), "(?:'[sS]|'[lL][lL])");
    EXPECT_EQ(coli::translateOnigurumaPattern("(?i:[a-c])x"), "(?:[a-cA-C])x");
    EXPECT_EQ(coli::translateOnigurumaPattern(R"([^\s\p{L}])"), R"([^\p{White_Space}\p{L}])");

    auto re = coli::Regex::compile("(?i:'s)|\\p{L}+", "test");
    ASSERT_TRUE(re.isOk()) << re.status().toString();
    std::vector<std::pair<size_t, size_t>> hits;
    re->findAll("'S", hits);
    EXPECT_EQ(hits, (std::vector<std::pair<size_t, size_t>>{{0, 2}}));
    hits.clear();
    re->findAll("'\xC5\xBF", hits); // U+017F LONG S: a letter, but not folded to 's'
    EXPECT_EQ(hits, (std::vector<std::pair<size_t, size_t>>{{1, 3}}));
}

} // namespace
