// The routing-trace reader (engine/cachesim/trace_reader.h): a well-formed trace is read with its
// shapes; each kind of bad input is refused with a message naming the file and line.
#include "cachesim/trace_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using coli::ErrorCode;
using coli::cachesim::parseRoutingTrace;
using coli::cachesim::readRoutingTrace;

namespace {

const std::string kHeader = R"({"format":"coli-routing-trace","version":1,"model":"m",)"
                            R"("n_layers":3,"n_experts":4,"top_k":2,"moe_layers":[0,2],)"
                            R"("prompt_tokens":2})";

std::string record(const std::string& experts, bool generated = false) {
    return std::string(R"({"pos":0,"token":1,"piece":"a","generated":)") +
           (generated ? "true" : "false") + R"(,"experts":)" + experts +
           R"(,"weights":[[0.5,0.5],[0.5,0.5]]})";
}

coli::Status parse(const std::string& text) {
    std::istringstream in(text);
    return parseRoutingTrace(in, "t.jsonl").status();
}

} // namespace

TEST(TraceReader, ReadsShapesExpertsAndGeneratedFlags) {
    std::istringstream in(kHeader + "\n" + record("[[0,3],[2,1]]") + "\n\n" +
                          record("[[1,2],[3,0]]", true) + "\n");
    auto t = parseRoutingTrace(in, "t.jsonl");
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    EXPECT_EQ(t->nLayers, 3);
    EXPECT_EQ(t->nExperts, 4);
    EXPECT_EQ(t->topK, 2);
    EXPECT_EQ(t->moeLayers, (std::vector<int>{0, 2}));
    ASSERT_EQ(t->nTokens(), 2);
    EXPECT_EQ(t->generated, (std::vector<uint8_t>{0, 1}));
    auto e = t->expertsAt(1, 1);
    EXPECT_EQ(std::vector<int32_t>(e.begin(), e.end()), (std::vector<int32_t>{3, 0}));
    e = t->expertsAt(0, 0);
    EXPECT_EQ(std::vector<int32_t>(e.begin(), e.end()), (std::vector<int32_t>{0, 3}));
}

TEST(TraceReader, BadJsonNamesFileAndLine) {
    const coli::Status s =
        parse(kHeader + "\n" + record("[[0,3],[2,1]]") + "\n" + R"({"experts": [[0,1)" + "\n");
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_EQ(s.message(), "t.jsonl:3: invalid JSON");
}

TEST(TraceReader, WrongFormatNameIsRefusedOnLineOne) {
    std::string h = kHeader;
    h.replace(h.find("coli-routing-trace"), 18, "coli-route-stats");
    const coli::Status s = parse(h + "\n" + record("[[0,3],[2,1]]") + "\n");
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_NE(s.message().find("t.jsonl:1: "), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("\"coli-route-stats\""), std::string::npos) << s.message();
}

TEST(TraceReader, WrongVersionIsRefused) {
    std::string h = kHeader;
    h.replace(h.find("\"version\":1"), 11, "\"version\":2");
    const coli::Status s = parse(h + "\n" + record("[[0,3],[2,1]]") + "\n");
    EXPECT_EQ(s.message(), "t.jsonl:1: header: version 2 is not 1");
}

TEST(TraceReader, ExpertOutOfRangeNamesFileLineAndLayer) {
    const coli::Status s =
        parse(kHeader + "\n" + record("[[0,3],[2,1]]") + "\n" + record("[[0,3],[4,1]]") + "\n");
    EXPECT_EQ(s.code(), ErrorCode::Malformed);
    EXPECT_EQ(s.message(), "t.jsonl:3: expert 4 out of range [0, 4) (MoE layer 1)");
    EXPECT_EQ(parse(kHeader + "\n" + record("[[-1,3],[2,1]]") + "\n").message(),
              "t.jsonl:2: expert -1 out of range [0, 4) (MoE layer 0)");
}

TEST(TraceReader, WrongListShapesAndRepeatsAreRefused) {
    // One layer missing, top-3 instead of top-2, a repeated id, a non-integer id.
    EXPECT_EQ(parse(kHeader + "\n" + record("[[0,3]]") + "\n").message(),
              "t.jsonl:2: \"experts\" must be a list of 2 lists (one per MoE layer)");
    EXPECT_EQ(parse(kHeader + "\n" + record("[[0,3],[2,1,0]]") + "\n").message(),
              "t.jsonl:2: experts of MoE layer 1 must be a list of top_k = 2 ids");
    EXPECT_EQ(parse(kHeader + "\n" + record("[[3,3],[2,1]]") + "\n").message(),
              "t.jsonl:2: expert 3 repeated in MoE layer 0");
    EXPECT_EQ(parse(kHeader + "\n" + record("[[0.5,3],[2,1]]") + "\n").message(),
              "t.jsonl:2: expert 0.5 out of range [0, 4) (MoE layer 0)");
}

TEST(TraceReader, BadHeaderSizesAreRefused) {
    std::string h = kHeader;
    h.replace(h.find("\"top_k\":2"), 9, "\"top_k\":5");
    EXPECT_EQ(parse(h + "\n").message(), "t.jsonl:1: header: \"top_k\" = 5 out of range [1, 4]");
    h = kHeader;
    h.replace(h.find("[0,2]"), 5, "[2,0]");
    EXPECT_EQ(parse(h + "\n").message(),
              "t.jsonl:1: header: moe_layers must be ascending without repeats");
    h = kHeader;
    h.replace(h.find("[0,2]"), 5, "[0,3]");
    EXPECT_EQ(parse(h + "\n").message(),
              "t.jsonl:1: header: moe_layers entry 3 is not a layer in [0, 3)");
}

TEST(TraceReader, EmptyTraceAndHeaderOnlyAreRefused) {
    EXPECT_EQ(parse("").message(), "t.jsonl:0: empty trace (no header line)");
    EXPECT_EQ(parse(kHeader + "\n").message(), "t.jsonl:1: no token records after the header");
}

TEST(TraceReader, FileErrorsNameThePath) {
    const std::string missing = std::string(COLI_BINARY_DIR) + "/no-such-trace.jsonl";
    auto r = readRoutingTrace(missing);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::NotFound);
    EXPECT_EQ(r.status().message(), missing + ": cannot open");

    const std::string path = std::string(COLI_BINARY_DIR) + "/test_cachesim_bad.jsonl";
    {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f << kHeader << "\n" << record("[[0,3],[2,9]]") << "\n";
    }
    r = readRoutingTrace(path);
    std::remove(path.c_str());
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().message(), path + ":2: expert 9 out of range [0, 4) (MoE layer 1)");
}
