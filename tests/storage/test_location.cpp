// The documented default location of the database (XDG data dir).
#include "storage/location.h"

#include <gtest/gtest.h>

using coli::storage::defaultDatabasePathFrom;

TEST(Location, XdgDataHomeWins) {
    auto p = defaultDatabasePathFrom("/data/me", "/home/me");
    ASSERT_TRUE(p.isOk());
    EXPECT_EQ(p.value(), "/data/me/colibri/colibri.db");
}

TEST(Location, FallsBackToHomeWhenXdgUnsetEmptyOrRelative) {
    for (const char* xdg : {static_cast<const char*>(nullptr), "", "relative/dir"}) {
        auto p = defaultDatabasePathFrom(xdg, "/home/me");
        ASSERT_TRUE(p.isOk());
        EXPECT_EQ(p.value(), "/home/me/.local/share/colibri/colibri.db");
    }
}

TEST(Location, NeitherSetIsNotFound) {
    auto p = defaultDatabasePathFrom(nullptr, nullptr);
    ASSERT_FALSE(p.isOk());
    EXPECT_EQ(p.status().code(), coli::ErrorCode::NotFound);
    EXPECT_NE(p.status().message().find("XDG_DATA_HOME"), std::string::npos);
}

TEST(Location, DownloadedModelsGoBesideTheDatabase) {
    using coli::storage::defaultModelsDirFrom;
    EXPECT_EQ(defaultModelsDirFrom("/data/me", "/home/me").value(), "/data/me/colibri/models");
    EXPECT_EQ(defaultModelsDirFrom("rel", "/home/me").value(),
              "/home/me/.local/share/colibri/models");
    EXPECT_EQ(defaultModelsDirFrom(nullptr, nullptr).status().code(), coli::ErrorCode::NotFound);
    EXPECT_EQ(coli::storage::modelFolderName("allenai/OLMoE-1B-7B-0924"),
              "allenai--OLMoE-1B-7B-0924");
}
