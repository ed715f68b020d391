// The memory cgroup's room (runtime/cgroup_memory.h) and the memory the default expert budget is
// taken from (runtime/expert_budget.h availableMemory), on fake /proc and /sys trees written into
// a temporary folder: cgroup v1, v2, hybrid (v1 memory beside a v2 "unified" mount, as on the
// project's build machine), nested cgroups, a cgroup namespace, "no limit" values, memory.high,
// and malformed files (MemAvailable alone, with a warning naming the file).
#include "runtime/cgroup_memory.h"
#include "runtime/expert_budget.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace coli;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20;
constexpr uint64_t GiB = uint64_t(1) << 30;

class FakeTree : public ::testing::Test {
protected:
    void SetUp() override {
        static int n = 0;
        m_root = fs::temp_directory_path() /
                 ("coli_cgroup_" + std::to_string(getpid()) + "_" + std::to_string(n++));
        fs::remove_all(m_root);
        fs::create_directories(m_root);
        paths.procRoot = (m_root / "proc").string();
        paths.fsRoot = (m_root / "fs").string();
        meminfo(8 * GiB);
    }
    void TearDown() override { fs::remove_all(m_root); }

    void write(const std::string& rel, const std::string& text) {
        const fs::path p = m_root / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
    void meminfo(uint64_t availBytes) {
        write("proc/meminfo", "MemTotal:       32000000 kB\nMemFree:         1000 kB\n"
                              "MemAvailable:   " +
                                  std::to_string(availBytes / 1024) + " kB\n");
    }
    // A v2 cgroup directory under fs/sys/fs/cgroup (rel "" = the mount's root).
    void v2Group(const std::string& rel, const std::string& max, const std::string& high,
                 uint64_t current, uint64_t inactiveFile) {
        const std::string d = "fs/sys/fs/cgroup" + rel;
        write(d + "/memory.max", max + "\n");
        write(d + "/memory.high", high + "\n");
        write(d + "/memory.current", std::to_string(current) + "\n");
        write(d + "/memory.stat", "anon 1000\nfile 5000\nactive_file 10\ninactive_file " +
                                      std::to_string(inactiveFile) + "\nactive_anon 3\n");
    }
    void v2Mount(const std::string& root = "/") {
        write("proc/self/mountinfo",
              "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
              "30 22 0:26 " +
                  root +
                  " /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
                  "rw,nsdelegate,memory_recursiveprot\n");
        write("fs/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma\n");
    }
    // A v1 memory cgroup directory under fs/sys/fs/cgroup/memory.
    void v1Group(const std::string& rel, const std::string& hierLimit, uint64_t usage,
                 uint64_t totalInactiveFile) {
        const std::string d = "fs/sys/fs/cgroup/memory" + rel;
        write(d + "/memory.usage_in_bytes", std::to_string(usage) + "\n");
        write(d + "/memory.limit_in_bytes", hierLimit + "\n");
        write(d + "/memory.stat", "cache 100\nrss 200\ninactive_file 7\n"
                                  "hierarchical_memory_limit " +
                                      hierLimit +
                                      "\nhierarchical_memsw_limit 9223372036854771712\n"
                                      "total_inactive_file " +
                                      std::to_string(totalInactiveFile) + "\n");
    }
    // This machine's layout: tmpfs at /sys/fs/cgroup, one v1 mount per controller, and a v2
    // "unified" mount with no memory controller.
    void hybridMount(const std::string& memoryRoot = "/") {
        write("proc/self/mountinfo",
              "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
              "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
              "35 31 0:32 " +
                  memoryRoot +
                  " /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
                  "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup "
                  "rw,name=systemd\n"
                  "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
        write("fs/sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
    }

    fs::path m_root;
    CgroupPaths paths;
};

TEST_F(FakeTree, CgroupV2LimitLessUsageWithoutInactiveFileCache) {
    v2Mount();
    write("proc/self/cgroup", "0::/app.slice/coli.scope\n");
    write("fs/sys/fs/cgroup/memory.stat", "anon 1\n"); // the root: no memory.max
    v2Group("/app.slice", "max", "max", 3 * GiB, 0);
    v2Group("/app.slice/coli.scope", std::to_string(2 * GiB), "max", 700 * MiB, 200 * MiB);
    Result<CgroupMemory> r = cgroupMemory(paths);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->version, 2);
    EXPECT_TRUE(r->limited);
    EXPECT_EQ(r->limitBytes, 2 * GiB);
    EXPECT_EQ(r->usedBytes, 500 * MiB);
    EXPECT_EQ(r->roomBytes, 2 * GiB - 500 * MiB);
    EXPECT_EQ(r->cgroupDir, paths.fsRoot + "/sys/fs/cgroup/app.slice/coli.scope");

    Result<AvailableMemory> a = availableMemory(paths);
    ASSERT_TRUE(a.isOk()) << a.status().message();
    EXPECT_EQ(a->memAvailable, 8 * GiB);
    EXPECT_EQ(a->bytes, 2 * GiB - 500 * MiB); // min(MemAvailable, room)
    EXPECT_TRUE(a->cgroupDecides());
    EXPECT_EQ(a->warning, "");
    // The budget rule with its margin then applies to that figure.
    EXPECT_EQ(defaultExpertBudget(0, MiB, 100000, a->bytes),
              a->bytes - budgetSafetyMargin(a->bytes));
}

TEST_F(FakeTree, CgroupV2AncestorTighterDecides) {
    v2Mount();
    write("proc/self/cgroup", "0::/a/b/c\n");
    v2Group("/a", std::to_string(1 * GiB), "max", 900 * MiB, 100 * MiB); // room 224 MiB
    v2Group("/a/b", "max", "max", 600 * MiB, 0);
    v2Group("/a/b/c", std::to_string(4 * GiB), "max", 300 * MiB, 0); // room 3.7 GiB
    Result<CgroupMemory> r = cgroupMemory(paths);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->limitBytes, 1 * GiB);
    EXPECT_EQ(r->roomBytes, 1 * GiB - 800 * MiB);
    EXPECT_EQ(r->cgroupDir, paths.fsRoot + "/sys/fs/cgroup/a");
}

TEST_F(FakeTree, CgroupV2MemoryHighTighterThanMax) {
    v2Mount();
    write("proc/self/cgroup", "0::/box\n");
    v2Group("/box", std::to_string(4 * GiB), std::to_string(3 * GiB), 1 * GiB, 0);
    Result<CgroupMemory> r = cgroupMemory(paths);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->limitBytes, 3 * GiB);
    EXPECT_EQ(r->roomBytes, 2 * GiB);
}

TEST_F(FakeTree, UsageAboveTheLimitLeavesNoRoom) {
    v2Mount();
    write("proc/self/cgroup", "0::/box\n");
    v2Group("/box", std::to_string(1 * GiB), "max", 2 * GiB, 100 * MiB);
    Result<AvailableMemory> a = availableMemory(paths);
    ASSERT_TRUE(a.isOk()) << a.status().message();
    EXPECT_EQ(a->cgroup.roomBytes, 0u);
    EXPECT_EQ(a->bytes, 0u);
    EXPECT_EQ(defaultExpertBudget(6 * MiB, MiB, 96, a->bytes), 6 * MiB); // the minimum
}

TEST_F(FakeTree, MaxAndTheV1UnlimitedValueMeanNoLimit) {
    v2Mount();
    write("proc/self/cgroup", "0::/a/b\n");
    v2Group("/a", "max", "max", 5 * GiB, 0);
    v2Group("/a/b", "9223372036854771712", "max", 1 * GiB, 0);
    Result<AvailableMemory> a = availableMemory(paths);
    ASSERT_TRUE(a.isOk()) << a.status().message();
    EXPECT_FALSE(a->cgroup.limited);
    EXPECT_EQ(a->cgroup.version, 2);
    EXPECT_EQ(a->bytes, 8 * GiB);
    EXPECT_FALSE(a->cgroupDecides());
    EXPECT_EQ(a->warning, "");
    EXPECT_TRUE(cgroupValueUnlimited(9223372036854771712ull));
    EXPECT_FALSE(cgroupValueUnlimited(64 * GiB));
}

TEST_F(FakeTree, CgroupV2WithoutMemoryControllerHasNoLimit) {
    v2Mount();
    write("fs/sys/fs/cgroup/cgroup.controllers", "cpu io pids\n");
    write("proc/self/cgroup", "0::/box\n");
    Result<CgroupMemory> r = cgroupMemory(paths);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_FALSE(r->limited);
    EXPECT_EQ(r->version, 0);
}

TEST_F(FakeTree, CgroupV1UsesHierarchicalLimitAndTotalInactiveFile) {
    write("proc/self/mountinfo",
          "25 20 0:22 / /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory\n"
          "26 20 0:23 / /sys/fs/cgroup/cpu,cpuacct rw shared:10 - cgroup cgroup rw,cpu,cpuacct\n");
    write("proc/self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/user/coli\n");
    v1Group("", "9223372036854771712", 6 * GiB, 0);
    v1Group("/user", std::to_string(3 * GiB), 2 * GiB, GiB);            // room 2 GiB
    v1Group("/user/coli", std::to_string(3 * GiB), 1 * GiB, 512 * MiB); // room 2.5 GiB
    Result<CgroupMemory> r = cgroupMemory(paths);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->version, 1);
    EXPECT_EQ(r->limitBytes, 3 * GiB);
    // Each level's own usage: the parent (shared with siblings) leaves less room.
    EXPECT_EQ(r->roomBytes, 2 * GiB);
    EXPECT_EQ(r->cgroupDir, paths.fsRoot + "/sys/fs/cgroup/memory/user");
}

TEST_F(FakeTree, HybridLikeThisMachineReadsTheV1MemoryHierarchy) {
    hybridMount();
    write("proc/self/cgroup", "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n");
    v1Group("", "9223372036854771712", 6 * GiB, 0);
    v1Group("/process_api", "9223372036854771712", 6 * GiB, 0);
    v1Group("/process_api/abc", std::to_string(2200 * 1000 * 1000ull), 300 * MiB, 0);
    Result<AvailableMemory> a = availableMemory(paths);
    ASSERT_TRUE(a.isOk()) << a.status().message();
    EXPECT_EQ(a->cgroup.version, 1);
    EXPECT_EQ(a->cgroup.limitBytes, 2200 * 1000 * 1000ull);
    EXPECT_EQ(a->bytes, 2200 * 1000 * 1000ull - 300 * MiB);
    // The case: 2.2 GB cgroup, MemAvailable 8 GiB: the budget follows the cgroup.
    EXPECT_LT(defaultExpertBudget(0, MiB, 100000, a->bytes), 2200 * 1000 * 1000ull - 300 * MiB);
}

TEST_F(FakeTree, NamespacedCgroupPathMapsToTheMountRoot) {
    // Inside a cgroup namespace the process sees "/", while the mount (made outside it) shows
    // the host's path as its root: the mount point is the process's cgroup.
    v2Mount("/kubepods/pod1/ctr");
    write("proc/self/cgroup", "0::/\n");
    v2Group("", std::to_string(1 * GiB), "max", 100 * MiB, 0);
    Result<CgroupMemory> r = cgroupMemory(paths);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->limitBytes, 1 * GiB);
    EXPECT_EQ(r->cgroupDir, paths.fsRoot + "/sys/fs/cgroup");
}

TEST_F(FakeTree, V1BindMountOfTheContainersCgroup) {
    // Docker without a cgroup namespace: the container's cgroup is bind-mounted, and
    // /proc/self/cgroup shows the host's path.
    hybridMount("/docker/ctr");
    write("proc/self/cgroup", "4:memory:/docker/ctr/inner\n0::/\n");
    v1Group("", std::to_string(2 * GiB), 500 * MiB, 0);
    v1Group("/inner", std::to_string(2 * GiB), 100 * MiB, 0);
    Result<CgroupMemory> r = cgroupMemory(paths);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->roomBytes, 2 * GiB - 500 * MiB);
    EXPECT_EQ(r->cgroupDir, paths.fsRoot + "/sys/fs/cgroup/memory");
}

TEST_F(FakeTree, NoCgroupMountedMeansNoLimit) {
    write("proc/self/mountinfo", "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n");
    Result<AvailableMemory> a = availableMemory(paths);
    ASSERT_TRUE(a.isOk()) << a.status().message();
    EXPECT_EQ(a->cgroup.version, 0);
    EXPECT_EQ(a->bytes, 8 * GiB);
    EXPECT_EQ(a->warning, "");
}

// Malformed or missing files: MemAvailable alone, and a warning naming the file.
TEST_F(FakeTree, MalformedFilesFallBackToMemAvailableNamingTheFile) {
    struct Case {
        const char* name;
        const char* file; // written after the good tree (relative to the temporary root)
        const char* text; // nullptr: removed
    };
    const Case cases[] = {
        {"bad memory.max", "fs/sys/fs/cgroup/box/memory.max", "lots\n"},
        {"negative memory.high", "fs/sys/fs/cgroup/box/memory.high", "-1\n"},
        {"no inactive_file", "fs/sys/fs/cgroup/box/memory.stat", "anon 1\nfile 2\n"},
        {"bad memory.current", "fs/sys/fs/cgroup/box/memory.current", "\n"},
        {"no memory.current", "fs/sys/fs/cgroup/box/memory.current", nullptr},
        {"no v2 line", "proc/self/cgroup", "1:name=systemd:/\n"},
        {"no controllers file", "fs/sys/fs/cgroup/cgroup.controllers", nullptr},
        {"no mountinfo", "proc/self/mountinfo", nullptr},
        {"cut mountinfo line", "proc/self/mountinfo", "30 22 0:26 / /sys/fs/cgroup rw - cgroup2\n"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        fs::remove_all(m_root / "fs");
        fs::remove_all(m_root / "proc/self");
        v2Mount();
        write("proc/self/cgroup", "0::/box\n");
        v2Group("/box", std::to_string(1 * GiB), "max", 100 * MiB, 0);
        if (c.text)
            write(c.file, c.text);
        else
            fs::remove(m_root / c.file);
        Result<CgroupMemory> r = cgroupMemory(paths);
        ASSERT_FALSE(r.isOk());
        const std::string shown = fs::path(c.file).filename().string();
        EXPECT_NE(r.status().message().find(shown), std::string::npos) << r.status().message();
        Result<AvailableMemory> a = availableMemory(paths);
        ASSERT_TRUE(a.isOk()) << a.status().message();
        EXPECT_EQ(a->bytes, 8 * GiB);
        EXPECT_FALSE(a->cgroup.limited);
        EXPECT_NE(a->warning.find(shown), std::string::npos) << a->warning;
        EXPECT_NE(a->warning.find("MemAvailable alone"), std::string::npos) << a->warning;
    }
}

TEST_F(FakeTree, MissingMemAvailableIsTheOnlyError) {
    v2Mount();
    write("proc/self/cgroup", "0::/box\n");
    v2Group("/box", std::to_string(1 * GiB), "max", 100 * MiB, 0);
    write("proc/meminfo", "MemTotal: 1 kB\n");
    Result<AvailableMemory> a = availableMemory(paths);
    ASSERT_FALSE(a.isOk());
    EXPECT_NE(a.status().message().find("meminfo: no MemAvailable line"), std::string::npos)
        << a.status().message();
}

} // namespace
