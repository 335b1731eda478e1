#ifndef BERTH_TEST_TESTING_PROCESS_H_
#define BERTH_TEST_TESTING_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace berth::testing {

// A child process (the real berth-scheduler binary, in integration and e2e tests) with its
// stdout+stderr in a log file. The destructor SIGKILLs it if still running.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // `env` entries "NAME=value" are added to the inherited environment.
  void Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::vector<std::string>& env = {});
  bool Running();
  // Sends `signal` and waits up to `timeout` for the exit; returns the exit status as
  // `waitpid` encodes it, or -1 when it did not exit in time.
  int Stop(int signal, std::chrono::milliseconds timeout);
  // Waits for the process to exit on its own; returns the exit code (128+signal if killed), or
  // -1 on timeout.
  int WaitExit(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool exited_ = false;
  std::string log_path_;
};

// Path of a binary built by this tree (_output/bin/<name>).
std::string BinaryPath(const std::string& name);

// A loopback TCP port that was free a moment ago (for --bind-address of child processes).
uint16_t FreePort();

// Writes `content` to a new file under the test's temp dir and returns its path.
std::string WriteTempFile(const std::string& name, const std::string& content);

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_PROCESS_H_
