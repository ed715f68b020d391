// SafetensorsFile: good files read back exactly; every refusal of open() has its own test that
// checks the error code and that the message names the file, the tensor and the problem.
#include "io/safetensors.h"

#include "st_writer.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

using namespace st_test;
using coli::DType;
using coli::ErrorCode;
using coli::SafetensorsFile;

namespace {

class SafetensorsTest : public ::testing::Test {
protected:
    TempDir tmp;
    std::string path = tmp.file("model.safetensors");

    coli::Status openStatus() { return SafetensorsFile::open(path).status(); }
    // Writes a file with the given header and `dataBytes` zero bytes of data.
    void writeHeader(const std::string& header, size_t dataBytes) {
        writeBytes(path, fileImage(header, Bytes(dataBytes, 0)));
    }
};

std::vector<Tensor> sampleTensors() {
    return {
        {"a.f32", "F32", {2, 2}, f32Bytes({1.5f, -2.25f, std::ldexp(1.0f, -140), INFINITY})},
        {"b.f16", "F16", {6}, u16Bytes({0x3C00, 0x0001, 0x7C00, 0xFC00, 0x8000, 0x03FF})},
        {"c.bf16", "BF16", {1, 3}, u16Bytes({0x3F80, 0xC0A0, 0x0001})},
        {"d.i32", "I32", {2}, Bytes{1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF}},
    };
}

} // namespace

TEST_F(SafetensorsTest, GoodFileListsTensorsWithAbsoluteOffsets) {
    const auto ts = sampleTensors();
    const std::string header = headerFor(ts, R"({"format":"pt","note":"hi"})");
    writeBytes(path, fileImage(header, concatData(ts)));
    auto f = SafetensorsFile::open(path);
    ASSERT_TRUE(f) << f.status().toString();
    const SafetensorsFile& file = *f.value();
    EXPECT_EQ(file.path(), path);
    EXPECT_EQ(file.tensors().size(), 4u);
    EXPECT_EQ(file.dataOffset(), 8 + header.size());
    EXPECT_EQ(file.metadata().at("format"), "pt");
    EXPECT_EQ(file.metadata().at("note"), "hi");

    const coli::TensorInfo* b = file.find("b.f16");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dtype, DType::F16);
    EXPECT_EQ(b->shape, (std::vector<int64_t>{6}));
    EXPECT_EQ(b->numel(), 6);
    EXPECT_EQ(b->nbytes, 12u);
    EXPECT_EQ(b->fileOffset, 8 + header.size() + 16); // after a.f32's 16 bytes
    EXPECT_EQ(file.find("missing"), nullptr);

    // Raw bytes come back exactly as written.
    const coli::TensorInfo* d = file.find("d.i32");
    ASSERT_NE(d, nullptr);
    int32_t ints[2];
    ASSERT_TRUE(file.readRaw(*d, 0, 8, ints));
    EXPECT_EQ(ints[0], 1);
    EXPECT_EQ(ints[1], -1);
    uint16_t half = 0;
    ASSERT_TRUE(file.readRaw(*b, 4, 2, &half));
    EXPECT_EQ(half, 0x7C00);
}

TEST_F(SafetensorsTest, ScalarZeroSizeAndPaddedHeader) {
    // A scalar (shape []), a zero-element tensor and trailing header spaces (writers pad to 8).
    std::string header =
        objectJson({entryJson("s", "F32", {}, 0, 4), entryJson("z", "F16", {0, 5}, 4, 4)}) + "   ";
    writeBytes(path, fileImage(header, f32Bytes({42.0f})));
    auto f = SafetensorsFile::open(path);
    ASSERT_TRUE(f) << f.status().toString();
    const coli::TensorInfo* s = f.value()->find("s");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->numel(), 1);
    float v = 0;
    ASSERT_TRUE(f.value()->readRaw(*s, 0, 4, &v));
    EXPECT_EQ(v, 42.0f);
    EXPECT_EQ(f.value()->find("z")->numel(), 0);
    EXPECT_EQ(f.value()->find("z")->nbytes, 0u);
}

TEST_F(SafetensorsTest, ReadRawOutsideTensorIsInvalidArgument) {
    writeSafetensors(path, sampleTensors());
    auto f = SafetensorsFile::open(path);
    ASSERT_TRUE(f);
    const coli::TensorInfo* a = f.value()->find("a.f32");
    char buf[32];
    EXPECT_TRUE(
        hasError(f.value()->readRaw(*a, 8, 9, buf), ErrorCode::InvalidArgument, {path, "a.f32"}));
    EXPECT_TRUE(
        hasError(f.value()->readRaw(*a, 17, 0, buf), ErrorCode::InvalidArgument, {path, "a.f32"}));
    EXPECT_TRUE(hasError(f.value()->readRaw(*a, 1, UINT64_MAX, buf), ErrorCode::InvalidArgument,
                         {"a.f32"}));
    EXPECT_TRUE(f.value()->readRaw(*a, 16, 0, buf)); // empty range at the end is fine
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
    EXPECT_TRUE(hasError(SafetensorsFile::open(tmp.file("nope.safetensors")).status(),
                         ErrorCode::NotFound, {"nope.safetensors"}));
}

// ---- one test per refusal ----

TEST_F(SafetensorsTest, RefusesFileShorterThan8Bytes) {
    writeBytes(path, Bytes{1, 2, 3, 4, 5});
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "5 bytes", "shorter than"}));
}

TEST_F(SafetensorsTest, RefusesHeaderLengthLargerThanFile) {
    writeBytes(path, fileImage("{}", Bytes(10, 0), /*headerLen=*/1000));
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed,
                         {path, "header length 1000", "larger than the file"}));
}

TEST_F(SafetensorsTest, RefusesAbsurdHeaderLength) {
    // 2^40 would be larger than the file too; the size limit is checked (and reported) first.
    writeBytes(path, fileImage("{}", Bytes(10, 0), int64_t(1) << 40));
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "absurdly large"}));
}

TEST_F(SafetensorsTest, RefusesInvalidJson) {
    writeHeader(R"({"a": {"dtype": "F32", )", 0);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "not valid JSON"}));
}

TEST_F(SafetensorsTest, RefusesHeaderThatIsNotAnObject) {
    writeHeader("[1, 2, 3]", 0);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "not a JSON object"}));
}

TEST_F(SafetensorsTest, RefusesEntryThatIsNotAnObject) {
    writeHeader(R"({"w": 5})", 0);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "not a JSON object"}));
}

TEST_F(SafetensorsTest, RefusesMissingDtype) {
    writeHeader(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "missing 'dtype'"}));
}

TEST_F(SafetensorsTest, RefusesMissingShape) {
    writeHeader(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "missing 'shape'"}));
}

TEST_F(SafetensorsTest, RefusesMissingDataOffsets) {
    writeHeader(R"({"w": {"dtype": "F32", "shape": [1]}})", 4);
    EXPECT_TRUE(
        hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "missing 'data_offsets'"}));
}

TEST_F(SafetensorsTest, RefusesDtypeOfWrongJsonType) {
    writeHeader(R"({"w": {"dtype": 7, "shape": [1], "data_offsets": [0, 4]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "'dtype'"}));
}

TEST_F(SafetensorsTest, RefusesShapeOfWrongJsonType) {
    writeHeader(R"({"w": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "'shape'"}));
    writeHeader(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "non-integer"}));
}

TEST_F(SafetensorsTest, RefusesDataOffsetsOfWrongJsonType) {
    writeHeader(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "'data_offsets'"}));
    writeHeader(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, "4"]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "'data_offsets'"}));
    writeHeader(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "'data_offsets'"}));
}

TEST_F(SafetensorsTest, RefusesDuplicateTensorNames) {
    // nlohmann would silently keep the second entry; the reader must notice.
    writeHeader(objectJson({entryJson("w", "F32", {1}, 0, 4), entryJson("w", "F32", {1}, 4, 8)}),
                8);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "duplicate tensor name 'w'"}));
}

TEST_F(SafetensorsTest, RefusesDuplicateKeyInsideAnEntry) {
    writeHeader(R"({"w": {"dtype": "F16", "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "duplicate key"}));
}

TEST_F(SafetensorsTest, RefusesUnknownDtype) {
    writeHeader(objectJson({entryJson("w", "F17", {1}, 0, 4)}), 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "unknown dtype 'F17'"}));
}

TEST_F(SafetensorsTest, RefusesUnsupportedKnownDtype) {
    writeHeader(objectJson({entryJson("w", "F64", {1}, 0, 8)}), 8);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Unsupported, {path, "'w'", "F64"}));
}

TEST_F(SafetensorsTest, RefusesF8E4M3PointingAtTheConverter) {
    writeHeader(objectJson({entryJson("mlp.w", "F8_E4M3", {4}, 0, 4)}), 4);
    EXPECT_TRUE(
        hasError(openStatus(), ErrorCode::Unsupported,
                 {path, "'mlp.w'", "F8_E4M3", "cannot be loaded directly", "coli convert"}));
}

TEST_F(SafetensorsTest, RefusesNegativeShape) {
    writeHeader(objectJson({entryJson("w", "F32", {2, -3}, 0, 4)}), 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "negative", "-3"}));
}

TEST_F(SafetensorsTest, RefusesOverflowingShape) {
    // 2^32 x 2^32 elements overflows int64; 2^61 F32 elements overflows the byte count.
    writeHeader(objectJson({entryJson("w", "F32", {int64_t(1) << 32, int64_t(1) << 32}, 0, 4)}), 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "overflows"}));
    writeHeader(objectJson({entryJson("w", "F32", {int64_t(1) << 61}, 0, 4)}), 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "overflows"}));
    // A zero dimension does not excuse a product that overflows before it.
    writeHeader(objectJson({entryJson("w", "F32", {int64_t(1) << 40, int64_t(1) << 40, 0}, 0, 0)}),
                0);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "overflows"}));
    // A dimension beyond int64.
    writeHeader(
        R"({"w": {"dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 4]}})", 4);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "overflows"}));
}

TEST_F(SafetensorsTest, RefusesReversedOffsets) {
    writeHeader(objectJson({entryJson("w", "F32", {1}, 8, 4)}), 8);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'w'", "reversed"}));
}

TEST_F(SafetensorsTest, RefusesOffsetsOutsideDataSection) {
    // 'a' is fine; 'b' points far past the 16-byte data section (not a plain truncation).
    writeHeader(
        objectJson({entryJson("a", "F32", {2}, 0, 8), entryJson("b", "F32", {2}, 100, 108)}), 16);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed,
                         {path, "'b'", "[100, 108)", "outside the data section", "16 bytes"}));
}

TEST_F(SafetensorsTest, RefusesOverlappingTensors) {
    writeHeader(objectJson({entryJson("a", "F32", {2}, 0, 8), entryJson("b", "F32", {2}, 4, 12)}),
                12);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'b'", "overlap", "'a'"}));
}

TEST_F(SafetensorsTest, RefusesOverlapHiddenBehindZeroSizeTensor) {
    // Sorted by begin: a [0,16), z [4,4), b [8,12): b overlaps a even though z sits in between.
    writeHeader(objectJson({entryJson("a", "F32", {4}, 0, 16), entryJson("z", "F32", {0}, 4, 4),
                            entryJson("b", "F32", {1}, 8, 12)}),
                16);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "'b'", "overlap", "'a'"}));
}

TEST_F(SafetensorsTest, RefusesByteSizeThatDisagreesWithShape) {
    writeHeader(objectJson({entryJson("w", "BF16", {2, 3}, 0, 8)}), 8);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed,
                         {path, "'w'", "hold 8 bytes", "[2, 3]", "BF16", "needs 12"}));
}

TEST_F(SafetensorsTest, RefusesTruncatedFile) {
    const auto ts = sampleTensors();
    Bytes img = fileImage(headerFor(ts), concatData(ts));
    img.erase(img.end() - 3, img.end());
    writeBytes(path, img);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "truncated", "'d.i32'"}));
}

TEST_F(SafetensorsTest, RefusesNonStringMetadata) {
    writeHeader(R"({"__metadata__": {"format": 1}})", 0);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "__metadata__", "'format'"}));
    writeHeader(R"({"__metadata__": "pt"})", 0);
    EXPECT_TRUE(hasError(openStatus(), ErrorCode::Malformed, {path, "__metadata__"}));
}

TEST_F(SafetensorsTest, FileShrunkAfterOpenIsIoErrorNamingFileAndTensor) {
    const auto ts = sampleTensors();
    writeSafetensors(path, ts);
    auto f = SafetensorsFile::open(path);
    ASSERT_TRUE(f);
    // Another process truncates the file under us: the short read must become an Io error.
    std::filesystem::resize_file(path, f.value()->dataOffset() + 20);
    const coli::TensorInfo* d = f.value()->find("d.i32");
    char buf[8];
    EXPECT_TRUE(hasError(f.value()->readRaw(*d, 0, 8, buf), ErrorCode::Io,
                         {path, "'d.i32'", "end of file"}));
}
