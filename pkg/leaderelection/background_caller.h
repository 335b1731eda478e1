#ifndef BERTH_PKG_LEADERELECTION_BACKGROUND_CALLER_H_
#define BERTH_PKG_LEADERELECTION_BACKGROUND_CALLER_H_

// Apiserver requests cannot be cancelled once sent, and one can hang far longer than a renew
// deadline (a per-request timeout times the client's retries). The elector therefore runs each
// request here, on a worker thread of its own, and stops waiting at its deadline: leadership is
// given up on time even while the request is still stuck.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace berth::leaderelection {

// Runs blocking calls one at a time on one worker thread. A call whose waiter gave up keeps the
// worker busy until it returns, and Start refuses new calls until then, so calls never overlap
// (the state they touch needs no lock of its own). Thread-safe. The destructor waits for the
// running call to return.
class BackgroundCaller {
 public:
  BackgroundCaller();
  ~BackgroundCaller();
  BackgroundCaller(const BackgroundCaller&) = delete;
  BackgroundCaller& operator=(const BackgroundCaller&) = delete;

  // Hands `call` to the worker; false (and `call` dropped) while an earlier call still runs.
  // `call` reports its own failures: an exception escaping it is swallowed.
  bool Start(std::function<void()> call);
  // Blocks until the started call returned (true), or until `give_up()` holds while it still
  // runs (false). Everything the call wrote is visible to the caller after a true return.
  // `give_up` runs on the waiting thread without any lock held, at least every `poll` and after
  // each Wake().
  bool Wait(const std::function<bool()>& give_up, std::chrono::milliseconds poll);
  // Makes a blocked Wait evaluate its give_up now.
  void Wake();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> pending_;  // Handed over by Start, not yet taken by the worker.
  bool busy_ = false;              // From Start until the call returned.
  bool shutdown_ = false;
  uint64_t wakes_ = 0;
  std::thread worker_;  // Last: starts after every other member is initialized.
};

}  // namespace berth::leaderelection

#endif  // BERTH_PKG_LEADERELECTION_BACKGROUND_CALLER_H_
