#include "test/testing/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "test/testing/cluster.h"

namespace berth::testing {

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
}

void ChildProcess::Start(const std::vector<std::string>& argv, const std::string& log_path,
                         const std::vector<std::string>& env) {
  log_path_ = log_path;
  std::vector<std::string> env_copy = env;
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    for (auto& e : env_copy) putenv(e.data());
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  exited_ = false;
}

bool ChildProcess::Running() {
  if (pid_ <= 0 || exited_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) {
    exited_ = true;
    return false;
  }
  return true;
}

int ChildProcess::WaitExit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

int ChildProcess::Stop(int signal, std::chrono::milliseconds timeout) {
  if (!Running()) return status_;
  kill(pid_, signal);
  if (WaitExit(timeout) < 0) return -1;
  return status_;
}

std::string ChildProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Binaries are built next to the test executables, whichever build tree (plain, sanitizer,
// scratch) produced them.
std::string BinaryPath(const std::string& name) {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / name).string();
}

uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("could not find a free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string WriteTempFile(const std::string& name, const std::string& content) {
  auto dir = std::filesystem::temp_directory_path() / ("berth-test-" + UniqueSuffix());
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << content;
  return path.string();
}

}  // namespace berth::testing
