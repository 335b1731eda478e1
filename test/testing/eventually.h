#ifndef BERTH_TEST_TESTING_EVENTUALLY_H_
#define BERTH_TEST_TESTING_EVENTUALLY_H_

// Waiting in tests for what another thread (a scheduler, an informer, a server) does.

#include <chrono>
#include <functional>
#include <thread>

namespace berth::testing {

// Polls `condition` every `poll` until it holds or `timeout` passes; returns whether it held (it
// is asked once more at the deadline).
inline bool Eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10),
                       std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(poll);
  }
  return condition();
}

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_EVENTUALLY_H_
