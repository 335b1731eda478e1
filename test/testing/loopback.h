#ifndef BERTH_TEST_TESTING_LOOPBACK_H_
#define BERTH_TEST_TESTING_LOOPBACK_H_

// A listening TCP socket on 127.0.0.1 at a port the kernel picks, for the hand-written servers of
// the tests (and the fault suite's proxy). Header-only so that tests of pkg/ libraries use it
// without linking test/testing's library.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace berth::testing {

struct LoopbackListener {
  int fd = -1;  // Owned by the caller.
  uint16_t port = 0;
};

// `socket_flags` are or-ed into the socket type (SOCK_NONBLOCK); SOCK_CLOEXEC always is. Throws
// std::runtime_error naming `who` when the socket cannot listen.
inline LoopbackListener ListenOnLoopback(const std::string& who, int socket_flags = 0,
                                         int backlog = 16) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | socket_flags, 0);
  if (fd < 0) throw std::runtime_error(who + ": socket: " + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    throw std::runtime_error(who + ": cannot listen on 127.0.0.1: " + error);
  }
  return {fd, ntohs(addr.sin_port)};
}

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_LOOPBACK_H_
