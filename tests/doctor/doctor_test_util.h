#pragma once
// Helpers shared by coli doctor's tests: a model folder copied into a temporary directory (to
// break one thing in it), a converted container, byte edits, and finding lookups.
#include "convert/converter.h"
#include "doctor/doctor.h"
#include "st_writer.h" // st_test::TempDir

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace doctor_test {

namespace fs = std::filesystem;
using coli::doctor::DoctorReport;
using coli::doctor::Finding;
using coli::doctor::Severity;

inline std::string fixture(const std::string& family) {
    return std::string(COLI_FIXTURE_DIR) + "/" + family;
}

inline std::string shippedModel() {
    return std::string(COLI_SOURCE_DIR) + "/resources/models/colibri-moe-tiny";
}

inline void copyDir(const fs::path& from, const fs::path& to) {
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(from))
        fs::copy_file(e.path(), to / e.path().filename(), fs::copy_options::overwrite_existing);
}

inline std::string readAll(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline void writeAll(const fs::path& p, const std::string& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << bytes;
}

// Flips the lowest bit of the byte at `offset` (size unchanged).
inline void flipByte(const fs::path& p, uint64_t offset) {
    std::string b = readAll(p);
    ASSERT_LT(offset, b.size());
    b[offset] = char(b[offset] ^ 1);
    writeAll(p, b);
}

// Replaces the first `from` in the file by `to`; fails the test when absent.
inline void replaceText(const fs::path& p, const std::string& from, const std::string& to) {
    std::string t = readAll(p);
    const size_t at = t.find(from);
    ASSERT_NE(at, std::string::npos) << p << " lacks " << from;
    t.replace(at, from.size(), to);
    writeAll(p, t);
}

// Converts the fixture `family` into dst (small shards, so that there are several).
inline void convertInto(const std::string& family, const fs::path& dst, uint64_t shardBytes) {
    coli::convert::ConvertOptions opt;
    opt.plan.maxShardBytes = shardBytes;
    auto r = coli::convert::convertCheckpoint(fixture(family), dst.string(), opt);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
}

// diagnoseModel without the bandwidth measurement (the tests about it ask for it).
inline DoctorReport diagnose(const fs::path& dir, bool deep = false, bool requireChat = false) {
    coli::doctor::DoctorOptions o;
    o.deep = deep;
    o.measureBandwidth = false;
    o.requireChatTemplate = requireChat;
    auto r = coli::doctor::diagnoseModel(dir.string(), o);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? r.value() : DoctorReport{};
}

// The findings about `file`, as one string for messages.
inline std::string describe(const DoctorReport& r) {
    std::string s;
    for (const Finding& f : r.findings)
        s += std::string(coli::doctor::severityName(f.severity)) + " [" + f.file + "] " +
             f.problem + " -> " + f.action + "\n";
    return s;
}

// The one finding of severity `sev` about `file`; null (and a test failure) when there is not
// exactly one.
inline const Finding* only(const DoctorReport& r, Severity sev, const std::string& file) {
    const Finding* found = nullptr;
    int n = 0;
    for (const Finding& f : r.findings)
        if (f.severity == sev && f.file == file) {
            found = &f;
            ++n;
        }
    EXPECT_EQ(n, 1) << "findings about " << file << ":\n" << describe(r);
    return n == 1 ? found : nullptr;
}

} // namespace doctor_test

namespace doctor_test {

// "1,048,576": written here rather than taken from the library, so the test checks its output.
inline std::string withCommas(uint64_t v) {
    std::string d = std::to_string(v), out;
    for (size_t i = 0; i < d.size(); ++i) {
        if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
        out += d[i];
    }
    return out;
}

inline bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace doctor_test
