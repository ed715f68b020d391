// WAL: readers on their own thread and connection see whole saves (never half of one) and are
// never blocked while writers save; two writers take turns through the busy timeout.
#include "storage/database.h"
#include "storage/schema.h"
#include "storage_test_util.h"

#include <atomic>
#include <thread>

using namespace coli::storage;
using storage_test::TempDir;

TEST(Concurrency, ReaderSeesWholeSavesWhileWritersSave) {
    TempDir t;
    const std::string path = t.file("colibri.db");
    int64_t modelA = 0, modelB = 0;
    {
        auto st = Storage::open(path);
        ASSERT_TRUE(st.isOk()) << st.status().toString();
        modelA = st.value()->modelId("a", "/a").value();
        modelB = st.value()->modelId("b", "/b").value();
    }
    constexpr int kSaves = 60;
    constexpr int kExperts = 512;
    std::atomic<bool> writing{true};
    std::atomic<int> writerErrors{0}, readerErrors{0}, torn{0}, reads{0};
    // Threading rule 6: each thread opens its own connection and keeps it to itself.
    auto writer = [&](int64_t model) {
        auto st = Storage::open(path);
        if (!st) {
            ++writerErrors;
            return;
        }
        for (int k = 1; k <= kSaves; ++k) {
            std::vector<ExpertHeat> e;
            for (int i = 0; i < kExperts; ++i)
                e.push_back({i / 64, i % 64, double(k)});
            if (!st.value()->saveHeat(model, e, k)) ++writerErrors;
        }
    };
    std::thread reader([&] {
        auto st = Storage::open(path);
        if (!st) {
            ++readerErrors;
            return;
        }
        while (writing.load()) {
            auto h = st.value()->loadHeat(modelA);
            if (!h) {
                ++readerErrors;
                continue;
            }
            ++reads;
            const auto& v = h.value();
            if (v.empty()) continue;
            if (v.size() != size_t(kExperts)) ++torn;
            for (const HeatRecord& r : v)
                if (r.heat != v[0].heat || r.lastSeen != v[0].lastSeen) ++torn;
        }
    });
    std::thread wa(writer, modelA), wb(writer, modelB);
    wa.join();
    wb.join();
    writing = false;
    reader.join();
    EXPECT_EQ(writerErrors.load(), 0);
    EXPECT_EQ(readerErrors.load(), 0);
    EXPECT_EQ(torn.load(), 0);
    EXPECT_GT(reads.load(), 0);
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk());
    for (int64_t m : {modelA, modelB}) {
        auto h = st.value()->loadHeat(m);
        ASSERT_EQ(h.value().size(), size_t(kExperts));
        EXPECT_EQ(h.value()[0].heat, double(kSaves));
        EXPECT_EQ(st.value()->tokenClock(m).value(), kSaves);
    }
}

TEST(Concurrency, SeveralFirstOpensOfANewFileMigrateItOnce) {
    for (int round = 0; round < 5; ++round) {
        TempDir t;
        const std::string path = t.file("colibri.db");
        constexpr int kThreads = 4;
        std::atomic<int> ok{0};
        std::atomic<uint64_t> migrations{0};
        std::vector<std::string> errors(kThreads);
        std::vector<std::thread> threads;
        for (int i = 0; i < kThreads; ++i)
            threads.emplace_back([&, i] {
                auto st = Storage::open(path);
                if (!st) {
                    errors[size_t(i)] = st.status().toString();
                    return;
                }
                migrations += st.value()->commits();
                if (st.value()->modelId("m", "/m")) ++ok;
            });
        for (auto& th : threads)
            th.join();
        for (const std::string& e : errors)
            EXPECT_EQ(e, "");
        EXPECT_EQ(ok.load(), kThreads);
        // Each step ran exactly once, in whichever connection got there first.
        EXPECT_EQ(migrations.load(), uint64_t(kSchemaVersion));
    }
}
