// Randomised robustness: thousands of mutated / truncated copies of a valid file. open() must
// return OK or an error status, never crash, hang or read out of bounds (run this under
// -DCOLI_SANITIZE=ON too); when it accepts a file, every tensor must be readable.
#include "io/safetensors.h"

#include "st_writer.h"

#include <gtest/gtest.h>

#include <random>

using namespace st_test;
using coli::SafetensorsFile;

namespace {

Bytes validImage(size_t& headerLen) {
    std::vector<Tensor> ts = {
        {"model.embed_tokens.weight", "BF16", {4, 3}, Bytes(24, 0x3F)},
        {"model.layers.0.mlp.experts.0.w1", "F16", {2, 2}, u16Bytes({0x3C00, 1, 0x7C00, 0x8000})},
        {"model.norm.weight", "F32", {3}, f32Bytes({1, 2, 3})},
        {"ids", "I64", {1}, Bytes(8, 1)},
    };
    const std::string h = headerFor(ts, R"({"format":"pt"})");
    headerLen = h.size();
    return fileImage(h, concatData(ts));
}

void mutate(Bytes& b, size_t headerLen, std::mt19937_64& rng) {
    auto pick = [&](size_t lo, size_t hi) { // inclusive
        return lo + size_t(rng() % (hi - lo + 1));
    };
    static const char kJsonChars[] = "{}[]\",:0123456789-.eE \\ntfu";
    const int kinds = 7;
    const int nMut = 1 + int(rng() % 4);
    for (int m = 0; m < nMut && !b.empty(); ++m) {
        switch (rng() % kinds) {
        case 0:
            b[pick(0, b.size() - 1)] = uint8_t(rng());
            break; // any byte anywhere
        case 1:    // a header byte replaced by a JSON-significant character
            if (b.size() > 8)
                b[pick(8, std::min(b.size() - 1, 8 + headerLen))] =
                    uint8_t(kJsonChars[rng() % (sizeof(kJsonChars) - 1)]);
            break;
        case 2: { // a digit in the header changed (keeps the JSON valid, breaks offsets/shapes)
            std::vector<size_t> digits;
            for (size_t i = 8; i < std::min(b.size(), 8 + headerLen); ++i)
                if (b[i] >= '0' && b[i] <= '9') digits.push_back(i);
            if (!digits.empty()) b[digits[rng() % digits.size()]] = uint8_t('0' + rng() % 10);
            break;
        }
        case 3:
            b.resize(pick(0, b.size()));
            break; // truncate
        case 4:
            b[pick(0, 7)] = uint8_t(rng());
            break; // header length byte
        case 5: {  // insert or delete a header byte (shifts everything after)
            const size_t at = pick(std::min<size_t>(8, b.size()), b.size());
            if (rng() & 1)
                b.insert(b.begin() + ptrdiff_t(at), uint8_t(rng()));
            else if (at < b.size())
                b.erase(b.begin() + ptrdiff_t(at));
            break;
        }
        case 6: { // a big digit run (overflowing numbers)
            const size_t at = pick(std::min<size_t>(8, b.size()), b.size());
            b.insert(b.begin() + ptrdiff_t(at), 21, uint8_t('9'));
            break;
        }
        }
    }
}

} // namespace

TEST(SafetensorsRobustness, MutatedFilesNeverCrash) {
    TempDir d;
    size_t headerLen = 0;
    const Bytes good = validImage(headerLen);
    std::mt19937_64 rng(20261201);
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        Bytes b = good;
        mutate(b, headerLen, rng);
        // A new file each time: truncating and rewriting one file makes ext4 flush it
        // (auto_da_alloc), which is slow on a busy disk.
        const std::string path = d.file("fuzz" + std::to_string(iter) + ".safetensors");
        writeBytes(path, b);
        auto f = SafetensorsFile::open(path);
        std::filesystem::remove(path);
        if (!f) {
            ++refused;
            ASSERT_FALSE(f.status().message().empty()) << iter;
            ASSERT_NE(f.status().message().find(path), std::string::npos)
                << iter << ": " << f.status().message();
            continue;
        }
        ++accepted;
        for (const coli::TensorInfo& t : f.value()->tensors()) {
            std::vector<uint8_t> buf(size_t(t.nbytes));
            ASSERT_LE(t.fileOffset + t.nbytes, b.size()) << iter << " " << t.name;
            ASSERT_TRUE(f.value()->readRaw(t, 0, t.nbytes, buf.data())) << iter << " " << t.name;
        }
    }
    // Both outcomes must actually occur, or the mutations are not exercising anything.
    EXPECT_GT(accepted, 50);
    EXPECT_GT(refused, 1000);
    std::printf("accepted %d, refused %d\n", accepted, refused);
}

TEST(CheckpointRobustness, MutatedIndexNeverCrashes) {
    TempDir d;
    writeSafetensors(d.path() / "model-1.safetensors", {{"a", "F32", {1}, f32Bytes({1.0f})}});
    writeSafetensors(d.path() / "model-2.safetensors", {{"b", "F16", {2}, u16Bytes({1, 2})}});
    const std::string good =
        R"({"metadata": {"total_size": 8}, "weight_map": {"a": "model-1.safetensors", )"
        R"("b": "model-2.safetensors"}})";
    std::mt19937_64 rng(7);
    static const char kChars[] = "{}[]\",:ab12-./ \\";
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 1500; ++iter) {
        std::string s = good;
        const int nMut = 1 + int(rng() % 3);
        for (int m = 0; m < nMut && !s.empty(); ++m) {
            const size_t at = rng() % s.size();
            switch (rng() % 3) {
            case 0:
                s[at] = kChars[rng() % (sizeof(kChars) - 1)];
                break;
            case 1:
                s.erase(at, 1 + rng() % 4);
                break;
            case 2:
                s.insert(at, 1, kChars[rng() % (sizeof(kChars) - 1)]);
                break;
            }
        }
        std::filesystem::remove(d.path() /
                                "model.safetensors.index.json"); // see above: no truncation
        writeText(d.path() / "model.safetensors.index.json", s);
        auto ck = coli::Checkpoint::open(d.path().string());
        if (!ck) {
            ++refused;
            ASSERT_FALSE(ck.status().message().empty()) << s;
            continue;
        }
        ++accepted;
        for (const coli::TensorInfo* t : ck.value()->tensors()) {
            std::vector<float> v;
            ASSERT_TRUE(ck.value()->readF32(t->name, v)) << s;
        }
    }
    EXPECT_GT(accepted, 10);
    EXPECT_GT(refused, 500);
}
