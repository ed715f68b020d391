// F8_E4M3 sources with DeepSeek-V3-style 128x128 block scales: a fixture made here with a
// hand-written encoder (torch 1.13 has no float8), converted, and compared with the engine's
// quantiser applied to an independently decoded copy.
#include "convert/converter.h"
#include "convert/source_checkpoint.h"
#include "convert_test_util.h"
#include "io/safetensors.h"
#include "quant/formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace coli::convert {
namespace {

namespace fs = std::filesystem;

// E4M3 "FN" by the formula (independent of the engine's table): 1 sign, 4 exponent bits
// (bias 7), 3 mantissa bits; exponent 0 is subnormal; 0x7F/0xFF are NaN; no infinities.
double decodeE4M3(uint8_t v) {
    const int s = v >> 7, e = (v >> 3) & 15, m = v & 7;
    if (e == 15 && m == 7) return NAN;
    const double x = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
    return s ? -x : x;
}

// Nearest E4M3 value, ties to the even code, saturating at +-448: a search over the 126 finite
// non-negative codes, so it cannot be wrong in the way a bit trick can.
uint8_t encodeE4M3(float x) {
    const double a = std::min(std::fabs(double(x)), 448.0);
    int best = 0;
    double bestErr = INFINITY;
    for (int c = 0; c <= 0x7E; ++c) {
        const double err = std::fabs(decodeE4M3(uint8_t(c)) - a);
        if (err < bestErr || (err == bestErr && (c & 1) == 0)) {
            best = c;
            bestErr = err;
        }
    }
    return uint8_t(best | (x < 0 && best != 0 ? 0x80 : 0));
}

TEST(F8E4M3, EncoderAndEngineDecoderAgree) {
    for (int v = 0; v < 256; ++v) {
        const double d = decodeE4M3(uint8_t(v));
        const float e = f8e4m3ToF32(uint8_t(v));
        if (std::isnan(d)) {
            EXPECT_TRUE(std::isnan(e)) << v;
            continue;
        }
        EXPECT_EQ(double(e), d) << v;
        if (v != 0x80) { // -0 encodes as +0
            EXPECT_EQ(encodeE4M3(float(d)), v) << v;
        }
    }
    EXPECT_EQ(decodeE4M3(0x7E), 448.0);
    EXPECT_EQ(decodeE4M3(0x01), std::ldexp(1.0, -9)); // smallest subnormal
    EXPECT_EQ(encodeE4M3(1000.0f), 0x7E);             // saturates
    EXPECT_EQ(encodeE4M3(1.0625f), 0x38);             // halfway 1 and 1.125: even code (1.0)
    EXPECT_EQ(encodeE4M3(1.1875f), 0x3A);             // halfway 1.125 and 1.25: even (1.25)
}

// The olmoe fixture with every 2-D "*_proj.weight" stored as F8_E4M3 plus "<name>_scale_inv"
// (scale_inv = amax of the 128x128 block / 448, as DeepSeek's fp8 cast computes it).
void writeF8Fixture(const fs::path& dir) {
    convert_test::copyDir(convert_test::fixture("olmoe"), dir);
    std::vector<st_test::Tensor> out;
    {
        auto ck = Checkpoint::open(dir.string());
        ASSERT_TRUE(ck);
        for (const TensorInfo* t : ck.value()->tensors()) {
            const bool f8 =
                t->shape.size() == 2 && t->name.find("_proj.weight") != std::string::npos;
            if (!f8) {
                st_test::Tensor x{t->name, dtypeName(t->dtype), t->shape, {}};
                x.data.resize(t->nbytes);
                ASSERT_TRUE(ck.value()->readRaw(*t, 0, t->nbytes, x.data.data()));
                out.push_back(std::move(x));
                continue;
            }
            std::vector<float> w;
            ASSERT_TRUE(ck.value()->readF32(t->name, w));
            const int64_t R = t->shape[0], C = t->shape[1];
            const int64_t SR = (R + 127) / 128, SC = (C + 127) / 128;
            std::vector<float> scale(size_t(SR * SC), 0.0f);
            for (int64_t r = 0; r < R; ++r)
                for (int64_t c = 0; c < C; ++c) {
                    float& s = scale[size_t((r / 128) * SC + c / 128)];
                    s = std::max(s, std::fabs(w[size_t(r * C + c)]));
                }
            for (float& s : scale)
                s = s > 0 ? s / 448.0f : 1.0f;
            st_test::Tensor q{t->name, "F8_E4M3", t->shape, st_test::Bytes(size_t(R * C))};
            for (int64_t r = 0; r < R; ++r)
                for (int64_t c = 0; c < C; ++c)
                    q.data[size_t(r * C + c)] =
                        encodeE4M3(w[size_t(r * C + c)] / scale[size_t((r / 128) * SC + c / 128)]);
            out.push_back(std::move(q));
            out.push_back({t->name + "_scale_inv", "F32", {SR, SC}, st_test::f32Bytes(scale)});
        }
    }
    st_test::writeSafetensors(dir / "model.safetensors", out);
}

TEST(ConvertF8, BlockScaledE4M3ConvertsLikeItsDecodedValues) {
    st_test::TempDir tmp;
    const fs::path src = tmp.path() / "f8";
    writeF8Fixture(src);
    // io refuses the file; the converter reads it.
    auto io = Checkpoint::open(src.string());
    ASSERT_FALSE(io);
    EXPECT_EQ(io.status().code(), ErrorCode::Unsupported);

    ConvertOptions opt;
    opt.plan.experts = StoredFormat::Q8_G64;
    auto rep = convertCheckpoint(src.string(), tmp.file("out"), opt);
    ASSERT_TRUE(rep) << rep.status().toString();
    const Container& m = rep->manifest;
    for (const TensorEntry& t : m.tensors)
        EXPECT_EQ(t.name.find("_scale_inv"), std::string::npos) << "scales are not stored";

    // Reference: the F8 file decoded here (formula + scale), then the engine's quantiser.
    auto raw = SourceCheckpoint::open(src.string());
    ASSERT_TRUE(raw) << raw.status().toString();
    auto orig = Checkpoint::open(convert_test::fixture("olmoe"));
    ASSERT_TRUE(orig);
    auto decoded = [&](const std::string& name, int64_t R, int64_t C) {
        const TensorInfo* t = raw.value()->find(name);
        std::vector<float> scale(size_t(((R + 127) / 128) * ((C + 127) / 128)));
        std::vector<uint8_t> bytes(size_t(R * C));
        EXPECT_TRUE(
            raw.value()->readF32Range(name + "_scale_inv", 0, int64_t(scale.size()), scale.data()));
        std::ifstream f(src / "model.safetensors", std::ios::binary);
        f.seekg(std::streamoff(t->fileOffset));
        f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
        std::vector<float> w(bytes.size());
        const int64_t SC = (C + 127) / 128;
        for (int64_t r = 0; r < R; ++r)
            for (int64_t c = 0; c < C; ++c)
                w[size_t(r * C + c)] = float(decodeE4M3(bytes[size_t(r * C + c)])) *
                                       scale[size_t((r / 128) * SC + c / 128)];
        return w;
    };
    double minCosF8 = 2;
    int checked = 0;
    for (const ExpertEntry& e : m.experts) {
        const std::string base = "model.layers." + std::to_string(e.layer) + ".mlp.experts." +
                                 std::to_string(e.expert) + ".";
        const std::vector<uint8_t> blob =
            convert_test::readRange(fs::path(tmp.file("out")) / e.file, e.offset, e.length);
        ASSERT_EQ(blob.size(), e.length);
        for (auto [proj, part] : {std::pair{"gate_proj", &e.gate}, std::pair{"up_proj", &e.up},
                                  std::pair{"down_proj", &e.down}}) {
            const std::string name = base + proj + ".weight";
            const int64_t R = part->shape[0], C = part->shape[1];
            const std::vector<float> w = decoded(name, R, C);
            std::vector<uint8_t> want(part->length);
            ASSERT_TRUE(
                quant::quantiseRows(weightFormat(part->format), w.data(), R, C, want.data()));
            EXPECT_EQ(std::memcmp(blob.data() + part->offset, want.data(), want.size()), 0) << name;
            std::vector<float> bf;
            ASSERT_TRUE(orig.value()->readF32(name, bf));
            minCosF8 = std::min(minCosF8, convert_test::cosine(w.data(), bf.data(), w.size()));
            ++checked;
        }
    }
    const TensorEntry* q = m.tensor("model.layers.0.self_attn.q_proj.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->sourceDtype, "F8_E4M3");
    EXPECT_EQ(checked, 2 * 8 * 3);
    EXPECT_GT(minCosF8, 0.99); // the F8 fixture itself is close to the BF16 weights
    std::printf("[figures] F8_E4M3 fixture vs BF16 original: min cosine %.5f over %d expert "
                "matrices\n",
                minCosF8, checked);
}

TEST(ConvertF8, MissingScaleIsRefused) {
    st_test::TempDir tmp;
    const fs::path src = tmp.path() / "f8";
    convert_test::copyDir(convert_test::fixture("olmoe"), src);
    std::vector<st_test::Tensor> out;
    {
        auto ck = Checkpoint::open(src.string());
        ASSERT_TRUE(ck);
        for (const TensorInfo* t : ck.value()->tensors()) {
            st_test::Tensor x{t->name, dtypeName(t->dtype), t->shape, {}};
            x.data.resize(t->nbytes);
            ASSERT_TRUE(ck.value()->readRaw(*t, 0, t->nbytes, x.data.data()));
            if (t->name == "model.layers.1.self_attn.o_proj.weight") {
                x.dtype = "F8_E4M3";
                x.data.resize(size_t(t->numel()));
            }
            out.push_back(std::move(x));
        }
    }
    st_test::writeSafetensors(src / "model.safetensors", out);
    auto r = convertCheckpoint(src.string(), tmp.file("out"), {});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Unsupported) << r.status().message();
    EXPECT_NE(r.status().message().find("o_proj.weight_scale_inv"), std::string::npos)
        << r.status().message();
}

} // namespace
} // namespace coli::convert
