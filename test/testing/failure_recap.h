#ifndef BERTH_TEST_TESTING_FAILURE_RECAP_H_
#define BERTH_TEST_TESTING_FAILURE_RECAP_H_

// A recap of the running test's failed assertions, for tests whose output is long: a CI log that
// keeps only the beginning and the end of a test's output then still shows what failed.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace berth::testing {

// Prints every failed assertion of the running test so far (file, line, and the first
// `max_chars` characters of its message); prints nothing when none failed.
inline void PrintFailureRecap(size_t max_chars = 600) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return;
  const ::testing::TestResult* result = info->result();
  bool header = false;
  for (int i = 0; i < result->total_part_count(); i++) {
    const ::testing::TestPartResult& part = result->GetTestPartResult(i);
    if (!part.failed()) continue;
    if (!header) {
      std::printf("\n--- failed assertions of %s.%s (recap) ---\n", info->test_suite_name(),
                  info->name());
      header = true;
    }
    std::string message = part.message() != nullptr ? part.message() : "";
    if (message.size() > max_chars) message = message.substr(0, max_chars) + "...";
    std::printf("%s:%d: %s\n", part.file_name() != nullptr ? part.file_name() : "?",
                part.line_number(), message.c_str());
  }
  std::fflush(stdout);
}

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_FAILURE_RECAP_H_
