#ifndef BERTH_TEST_TESTING_TCP_PROXY_H_
#define BERTH_TEST_TESTING_TCP_PROXY_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace berth::testing {

// A loopback TCP proxy for fault tests: every connection accepted on port() is forwarded byte for
// byte to 127.0.0.1:<target port>, so TLS passes through untouched and the client still verifies
// the server's certificate (which must name 127.0.0.1). On command it cuts every live connection,
// closing both sides, the way a load balancer that restarts or a network that partitions would.
// While the target refuses connections, an accepted connection is closed at once, before any
// byte: what a client behind a load balancer sees when every backend is down.
//
// Cuts alternate between a reset (RST to both peers) and an orderly close (FIN to both), so a
// client meets both an ECONNRESET and an unexpected end of stream.
//
// One thread owns every socket and forwards with poll(); the public methods are thread-safe.
class TcpProxy {
 public:
  // Listens on 127.0.0.1 at a port the kernel picks. Throws std::runtime_error when it cannot.
  explicit TcpProxy(uint16_t target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  uint16_t port() const { return port_; }

  // Closes both sides of every connection open now; returns how many it closed. Returns after
  // they are closed, so a request sent after it never rides an old connection.
  size_t CutAll();

  // Calls CutAll() every `period` on a background thread until StopCutting() or destruction.
  void CutEvery(std::chrono::milliseconds period);
  void StopCutting();

  // Connections accepted and forwarded (the target accepted them too), since construction.
  uint64_t forwarded() const { return forwarded_.load(); }
  // Connections accepted while the target refused them.
  uint64_t refused() const { return refused_.load(); }
  // Connections closed by CutAll(), and how many CutAll() calls closed at least one.
  uint64_t connections_cut() const { return connections_cut_.load(); }
  uint64_t cuts() const { return cuts_.load(); }

 private:
  class Loop;

  uint16_t port_ = 0;
  std::atomic<uint64_t> forwarded_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> connections_cut_{0};
  std::atomic<uint64_t> cuts_{0};

  // Guards the cutter's stop flag; the cutter thread waits on cutter_cv_.
  std::mutex cutter_mu_;
  std::condition_variable cutter_cv_;
  bool cutter_stop_ = false;
  std::thread cutter_;

  // Declared last: destroyed (its thread joined) before the counters it updates.
  std::unique_ptr<Loop> loop_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_TCP_PROXY_H_
