# The engine's use of a mirror (docs/mirror.md "The engine's use of a mirror"): included from
# tests/CMakeLists.txt, separate from the staging tests' tests/mirror/CMakeLists.txt.
coli_add_gtest(test_mirror_reads SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mirror_reads.cpp
    LIBS coli_forward coli_sampler coli_convert coli_mirror_load LABELS fast FIXTURES coli_fixtures)
target_include_directories(test_mirror_reads PRIVATE ${PROJECT_SOURCE_DIR}/tests/io)
set_tests_properties(test_mirror_reads PROPERTIES ENVIRONMENT "OMP_WAIT_POLICY=passive" TIMEOUT 120)
# The fallback under concurrency (also under ThreadSanitizer; --gtest_repeat=200 by hand).
coli_add_gtest(test_mirror_reads_stress SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mirror_reads_stress.cpp
    LIBS coli_tiers coli_convert coli_mirror LABELS fast tsan FIXTURES coli_fixtures)
target_include_directories(test_mirror_reads_stress PRIVATE ${PROJECT_SOURCE_DIR}/tests/io
    ${PROJECT_SOURCE_DIR}/tests/tiers)
set_tests_properties(test_mirror_reads_stress PROPERTIES TIMEOUT 60)
