#ifndef BERTH_PKG_CLIENT_HTTP_CLIENT_H_
#define BERTH_PKG_CLIENT_HTTP_CLIENT_H_

// Internals of pkg/client shared between its translation units and its unit tests. Nothing
// outside pkg/client (and its tests beside it) includes this header.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"

namespace berth::client::internal {

// Attempts per request, the first one included.
inline constexpr int kMaxAttempts = 5;
inline constexpr std::chrono::milliseconds kBackoffBase{100};
inline constexpr std::chrono::milliseconds kBackoffCap{5000};
inline constexpr std::chrono::seconds kRetryAfterCap{30};

// The bytes of a stream that arrives in arbitrarily split chunks and is consumed from the front,
// record by record. Not thread-safe.
class StreamBuffer {
 public:
  void Append(std::string_view data);

 protected:
  std::string buffer_;
  size_t start_ = 0;  // Invariant: buffer_[0, start_) has been consumed.
};

// Reassembles newline-delimited records.
class LineSplitter : public StreamBuffer {
 public:
  // Pops the next complete line without its "\n" (and a trailing "\r"); false when none is
  // complete yet. Throws ApiError when more than kMaxWatchLineBytes arrived without a newline.
  bool NextLine(std::string* line);
  // Bytes received after the last newline.
  std::string_view Pending() const;
};

// Reassembles the frames of a protobuf watch stream: each a 4-byte big-endian length, then that
// many bytes.
class FrameSplitter : public StreamBuffer {
 public:
  // Pops the next complete frame without its length; false when none is complete yet. Throws
  // ApiError when a frame announces more than kMaxWatchFrameBytes.
  bool NextFrame(std::string* frame);
  // Whether bytes of an incomplete frame were received.
  bool HasPending() const { return start_ < buffer_.size(); }
};

// The events of a watch response body fed in whatever pieces the connection delivers: JSON lines,
// or with `protobuf` length-prefixed frames (see WatchOptions::undecoded_protobuf_pods for
// `undecoded_pods`). Not thread-safe.
class WatchEventDecoder {
 public:
  WatchEventDecoder(bool protobuf, bool undecoded_pods)
      : protobuf_(protobuf), undecoded_pods_(undecoded_pods) {}

  void Append(std::string_view bytes);
  // Pops the next complete event; false when none is complete yet. Blank lines are skipped.
  // Throws ApiError on a malformed record.
  bool Next(WatchEvent* event);
  // Once the body has ended: pops the last JSON record when the server did not end it with a
  // newline; false when nothing is left. Throws ApiError when the body ends inside a frame or the
  // last record is malformed.
  bool Finish(WatchEvent* event);

 private:
  const bool protobuf_;
  const bool undecoded_pods_;
  LineSplitter lines_;
  FrameSplitter frames_;
  std::string record_;  // Reused, so a record does not cost an allocation.
};

// Far above any object the apiserver stores (etcd's default request limit is 1.5 MiB, and a JSON
// event is a few times its protobuf size at most): a longer frame or line means the stream is
// corrupt or hostile, and is not worth buffering.
inline constexpr size_t kMaxWatchFrameBytes = 64 << 20;
inline constexpr size_t kMaxWatchLineBytes = 64 << 20;

// Percent-encodes everything except RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view value);

// The query string (without "?") of one LIST page.
std::string ListQuery(const ListOptions& options, const std::string& continue_token);

// The query string (without "?") of a watch request.
std::string WatchQuery(const WatchOptions& options);

// Retry-After as delta-seconds or an HTTP-date (RFC 9110 section 10.2.3); nullopt when
// unparseable. A date in the past yields 0s.
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value,
                                                    std::chrono::system_clock::time_point now);

// The pause before the next attempt after `failed_attempts` (>= 1) failures: the server's
// Retry-After (capped at kRetryAfterCap) when given, else exponential backoff from kBackoffBase
// capped at kBackoffCap, scaled into [50%, 100%] by `jitter` in [0, 1].
std::chrono::milliseconds BackoffDelay(int failed_attempts, const ApiError& error, double jitter);

// Whether a failed attempt is worth repeating. Idempotent verbs (GET, LIST, WATCH, PUT, DELETE)
// retry every Transient() error. POST (create, binding) and PATCH (a JSON patch may append) are
// not idempotent: they retry only when the request provably never reached the server
// (`request_not_sent`: no connection or TLS session, or its body never handed to one) or when
// the server refused it before processing (429, 503); a timeout or a reset after the request was
// written may have applied it already.
bool ShouldRetry(const ApiError& error, bool idempotent, bool request_not_sent);

// Decodes one line of a watch stream ({"type":...,"object":...}); throws ApiError on bad input.
WatchEvent DecodeWatchEvent(std::string_view line);
// Decodes one frame of a protobuf watch stream (see WatchOptions::undecoded_protobuf_pods);
// throws ApiError on bad input.
WatchEvent DecodeProtobufWatchEvent(std::string_view frame, bool undecoded_pods = false);

// Reads a whole file: false, with a reason fit for an error message, when it cannot.
using FileReader =
    std::function<bool(const std::string& path, std::string* content, std::string* reason)>;

// LoadKubeconfig with the kubeconfig and every file it names read through `read_file`.
Config LoadKubeconfigWith(const std::string& path, const std::string& context,
                          const FileReader& read_file);

// What the client's transport counted (tests and diagnostics); zeros for a Client that is not
// NewClient's.
TransportStats StatsOf(const Client& client);

}  // namespace berth::client::internal

#endif  // BERTH_PKG_CLIENT_HTTP_CLIENT_H_
