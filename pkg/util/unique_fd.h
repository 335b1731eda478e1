#ifndef BERTH_PKG_UTIL_UNIQUE_FD_H_
#define BERTH_PKG_UTIL_UNIQUE_FD_H_

// A file descriptor with one owner, closed when the owner goes. Not thread-safe.

#include <unistd.h>

#include <utility>

namespace berth::util {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes the descriptor now (a no-op when there is none).
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_UNIQUE_FD_H_
