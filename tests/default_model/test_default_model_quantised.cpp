// Issue 4's quality bar on the trained default model (its f32 margins are real, unlike the random
// fixtures'): teacher-forced top-1 agreement of the quantised forward with the f32 forward on the
// 5 golden greedy sequences, 160 positions (int8 >= 31/32 of them, int4-g64 >= 28/32, as rates
// over all positions), and the held-out loss delta
// on tests/default_model/heldout/ (int8 < 0.5 %, int4-g64 < 3 %). Prints the table of
// docs/quantisation.md.
#include "io/safetensors.h"
#include "model/config.h"
#include "model/quantise_weights.h"
#include "runtime/session.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

namespace coli {
namespace {

using quant::WeightFormat;

const char* const kDomains[] = {"kjv_en",  "fortunes_en", "fortunes_de", "fortunes_es",
                                "dict_en", "pydoc",       "pycode"};
constexpr int kWindow = 512; // tokens per evaluation window (each from an empty KV cache)

struct Scheme {
    const char* name;
    WeightQuantisation q;
    int minAgreeOf32;    // agreement rate over all golden positions, scaled to 32
    double maxLossDelta; // relative, over all domains
};

std::vector<Scheme> schemes() {
    WeightQuantisation int8;
    int8.experts = int8.dense = int8.embed = int8.lmHead = WeightFormat::Q8_G64;
    WeightQuantisation int4;
    int4.experts = WeightFormat::Q4_G64;
    int4.dense = int4.embed = int4.lmHead = WeightFormat::Q8_G64;
    return {{"int8", int8, 31, 0.005}, {"int4-g64 experts, int8 rest", int4, 28, 0.03}};
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::unique_ptr<LoadedModel> loadModel(const WeightQuantisation& q) {
    ModelLoadOptions o;
    o.quantisation = q;
    auto m = LoadedModel::load(COLI_SHIPPED_MODEL_DIR, o);
    EXPECT_TRUE(m.isOk()) << m.status().toString();
    return m.isOk() ? std::move(m.value()) : nullptr;
}

// Summed NLL (nats) and predicted-token count of `ids` in windows of kWindow tokens.
std::pair<double, int64_t> nll(Model& m, const std::vector<int32_t>& ids) {
    const int V = m.config().vocabSize;
    double sum = 0;
    int64_t n = 0;
    for (size_t w0 = 0; w0 + 1 < ids.size(); w0 += kWindow) {
        const size_t len = std::min<size_t>(kWindow, ids.size() - w0);
        if (len < 2) break;
        std::vector<int32_t> win(ids.begin() + w0, ids.begin() + w0 + len);
        KVCache kv;
        std::vector<float> logits;
        EXPECT_TRUE(m.forward(win, kv, logits, true).isOk());
        for (size_t i = 0; i + 1 < len; ++i) {
            const float* row = &logits[i * V];
            double mx = row[0];
            for (int v = 1; v < V; ++v)
                mx = std::max(mx, double(row[v]));
            double z = 0;
            for (int v = 0; v < V; ++v)
                z += std::exp(double(row[v]) - mx);
            sum += std::log(z) + mx - double(row[win[i + 1]]);
            ++n;
        }
    }
    return {sum, n};
}

int argmaxRow(const float* x, int n) {
    return int(std::max_element(x, x + n) - x);
}

TEST(DefaultModelQuantised, AgreementAndHeldOutLossDelta) {
    auto f32 = loadModel({});
    ASSERT_TRUE(f32);
    const int V = f32->model().config().vocabSize;
    std::map<std::string, std::vector<int32_t>> text;
    for (const char* d : kDomains) {
        const std::string t =
            readFile(std::string(COLI_SOURCE_DIR "/tests/default_model/heldout/") + d + ".txt");
        ASSERT_FALSE(t.empty()) << d;
        text[d] = f32->tokenizer().encode(t);
    }
    // Golden greedy sequences: prompt + 31 of its 32 greedy tokens predict 32 positions.
    std::ifstream gin(COLI_DEFAULT_MODEL_GOLDEN);
    const auto golden = nlohmann::json::parse(gin);
    std::vector<std::vector<int32_t>> seqs;
    std::vector<size_t> firstPred;
    for (const auto& c : golden.at("cases")) {
        auto s = c.at("prompt_ids").get<std::vector<int32_t>>();
        firstPred.push_back(s.size() - 1);
        const auto g = c.at("greedy").get<std::vector<int32_t>>();
        s.insert(s.end(), g.begin(), g.end() - 1);
        seqs.push_back(s);
    }
    auto logitsOf = [](Model& m, const std::vector<int32_t>& s) {
        KVCache kv;
        std::vector<float> out;
        EXPECT_TRUE(m.forward(s, kv, out, true).isOk());
        return out;
    };
    std::map<std::string, std::pair<double, int64_t>> base;
    double baseSum = 0;
    int64_t baseN = 0;
    for (const auto& [d, ids] : text) {
        base[d] = nll(f32->model(), ids);
        baseSum += base[d].first;
        baseN += base[d].second;
    }
    std::printf("f32: held-out loss %.4f nats/token over %lld tokens\n", baseSum / baseN,
                (long long)baseN);
    for (const Scheme& s : schemes()) {
        auto qm = loadModel(s.q);
        ASSERT_TRUE(qm);
        std::string agreeText;
        int agreeAll = 0, positions = 0;
        for (size_t i = 0; i < seqs.size(); ++i) {
            const auto a = logitsOf(f32->model(), seqs[i]);
            const auto b = logitsOf(qm->model(), seqs[i]);
            int agree = 0;
            for (size_t p = 0; p < 32; ++p) {
                const size_t row = (firstPred[i] + p) * size_t(V);
                agree += argmaxRow(&a[row], V) == argmaxRow(&b[row], V);
            }
            agreeText.append(" ").append(std::to_string(agree));
            agreeAll += agree;
            positions += 32;
        }
        EXPECT_GE(agreeAll * 32, s.minAgreeOf32 * positions)
            << s.name << ": " << agreeAll << " of " << positions << " positions agree";
        double sum = 0;
        int64_t n = 0;
        std::string perDomain;
        for (const auto& [d, ids] : text) {
            const auto r = nll(qm->model(), ids);
            sum += r.first;
            n += r.second;
            char buf[64];
            std::snprintf(buf, sizeof buf, " %s %+.2f%%", d.c_str(),
                          100 * (r.first / base[d].first - 1));
            perDomain += buf;
        }
        const double delta = sum / baseSum - 1;
        std::printf("%s: teacher-forced top-1 %d/%d (per golden sequence, of 32:%s); held-out "
                    "loss %.4f (%+.3f%%);%s\n",
                    s.name, agreeAll, positions, agreeText.c_str(), sum / n, 100 * delta,
                    perDomain.c_str());
        EXPECT_LT(delta, s.maxLossDelta) << s.name;
    }
}

} // namespace
} // namespace coli

namespace coli {
namespace {

// Per-tensor cosine of dequantised vs original weights on the trained model, per tensor class
// (routed experts, the rest), for the table of docs/quantisation.md.
TEST(DefaultModelQuantised, TensorCosines) {
    auto ckpt = Checkpoint::open(COLI_SHIPPED_MODEL_DIR);
    ASSERT_TRUE(ckpt.isOk()) << ckpt.status().toString();
    auto cfg = loadConfig(COLI_SHIPPED_MODEL_DIR);
    ASSERT_TRUE(cfg.isOk());
    for (const Scheme& s : schemes()) {
        auto w = loadWeights(**ckpt, *cfg);
        ASSERT_TRUE(w.isOk());
        std::vector<TensorQuantReport> rep;
        ASSERT_TRUE(quantiseWeights(*w, s.q, &rep).isOk());
        double minExpert = 1, minOther = 1, meanExpert = 0;
        int nExpert = 0, nOther = 0;
        int64_t before = 0, after = 0;
        for (const auto& r : rep) {
            ASSERT_NE(r.format, "f32")
                << r.name << ": the default model's widths are multiples of 64";
            before += r.bytesF32;
            after += r.bytesQuantised;
            if (r.name.find(".experts.") != std::string::npos) {
                minExpert = std::min(minExpert, r.cosine);
                meanExpert += r.cosine;
                ++nExpert;
            } else {
                minOther = std::min(minOther, r.cosine);
                ++nOther;
            }
        }
        ASSERT_GT(nExpert, 0);
        std::printf("%s: %d expert matrices min cosine %.6f (mean %.6f); %d other matrices min "
                    "cosine %.6f; %.2f MB f32 -> %.2f MB\n",
                    s.name, nExpert, minExpert, meanExpert / nExpert, nOther, minOther,
                    before / 1e6, after / 1e6);
        EXPECT_GE(minOther, 0.9999) << s.name << ": int8 matrices";
        EXPECT_GE(minExpert, s.q.experts == WeightFormat::Q4_G64 ? 0.99 : 0.9999) << s.name;
    }
}

} // namespace
} // namespace coli
