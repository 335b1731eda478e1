#ifndef BERTH_PKG_CLIENT_CLIENT_H_
#define BERTH_PKG_CLIENT_CLIENT_H_

// The contract of the Kubernetes client layer: connection config, typed API errors, REST verbs
// and watch streams over HTTPS. Implementations live beside this header; nothing above
// pkg/client sees the transport (curl_transport.h: HTTP/2 or HTTP/1.1 over libcurl).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::client {

class RateLimiter;

// A kubeconfig user's exec credential plugin (client.authentication.k8s.io/v1 or v1beta1): a
// command that prints an ExecCredential carrying a bearer token, a client certificate, or both.
// It runs without a terminal (spec.interactive is false), its credentials are kept until their
// expirationTimestamp, and it runs again when the apiserver answers 401.
struct ExecConfig {
  std::string api_version;  // "client.authentication.k8s.io/v1" or ".../v1beta1".
  std::string command;      // Looked up on PATH unless it contains a '/'.
  std::vector<std::string> args;
  // Added to Berth's own environment, replacing variables of the same name.
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;  // Shown when the command cannot be found.
  // Whether KUBERNETES_EXEC_INFO carries spec.cluster (server, CA, tls-server-name, proxy-url).
  bool provide_cluster_info = false;
  // spec.cluster.config: the JSON of the cluster's client.authentication.k8s.io/exec extension;
  // empty when it has none.
  std::string cluster_config_json;
  // Where it was configured, for messages: "kubeconfig <file>: users[name=u].user.exec".
  std::string origin;
};

// How to reach and authenticate to one apiserver. Holds secrets: never log it (Describe()
// prints only what is safe).
struct Config {
  std::string server;  // "https://127.0.0.1:6443"
  std::string ca_pem;  // Trusted roots; empty: the system store.
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // Overrides the host name checked against the certificate.
  // An http://, https:// or socks5:// proxy (the kubeconfig cluster's proxy-url). Empty: the
  // environment decides as Go's http.ProxyFromEnvironment does (HTTPS_PROXY or HTTP_PROXY by the
  // server's scheme, minus NO_PROXY; never for localhost or a loopback address).
  std::string proxy_url;
  std::string bearer_token;
  // When set, the token is re-read from this file (at most once a minute) so rotated bound
  // service-account tokens keep working; it wins over bearer_token.
  std::string bearer_token_file;
  std::string client_cert_pem;
  std::string client_key_pem;
  // When both are set, the pair is re-read from these files (checked at most once a minute) once
  // either file's modification time changes, so a rotated client certificate is used for new
  // connections; client_cert_pem and client_key_pem hold their contents at load time.
  std::string client_cert_file;
  std::string client_key_file;
  // Credentials from a plugin instead of the fields above (which must then be empty).
  std::optional<ExecConfig> exec;
  double qps = 50;  // <= 0: no client-side limit.
  int burst = 100;
  std::chrono::milliseconds timeout{30000};  // Per request, except watches.
  std::string user_agent;                    // Default: "berth-scheduler/<version>".

  // "server=https://... auth=client-certificate ca=custom", without secrets.
  std::string Describe() const;
};

// A kubeconfig or in-cluster configuration that cannot be used. The message names the file and
// the field.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads the current context (or `context` when non-empty) of a kubeconfig file. Supports
// certificate-authority(-data), insecure-skip-tls-verify, tls-server-name, proxy-url, token,
// tokenFile, client-certificate(-data), client-key(-data) and exec credential plugins; anything
// else that carries credentials (auth-provider, username/password, impersonation) is a
// ConfigError. Relative paths (and an exec command containing a '/') resolve against the
// kubeconfig's directory.
Config LoadKubeconfig(const std::string& path, const std::string& context = "");

// The in-cluster config: KUBERNETES_SERVICE_HOST/PORT plus token and ca.crt from
// `service_account_dir` (default /var/run/secrets/kubernetes.io/serviceaccount).
Config InClusterConfig(const std::string& service_account_dir = "");

// --kubeconfig when given, else in-cluster when KUBERNETES_SERVICE_HOST is set (credentials from
// $BERTH_SERVICE_ACCOUNT_DIR when set, else the mounted service-account volume), else $KUBECONFIG,
// else ~/.kube/config.
Config LoadConfig(const std::string& kubeconfig_path);

enum class ErrorReason {
  kUnknown,
  kBadRequest,
  kUnauthorized,
  kForbidden,
  kNotFound,
  kAlreadyExists,
  kConflict,
  kGone,  // 410: Gone or Expired (resourceVersion too old).
  kInvalid,
  kTooManyRequests,
  kInternalError,
  kServiceUnavailable,
  kTimeout,    // Server- or client-side timeout.
  kTransport,  // Connection refused/reset, DNS, ...
  kTLS,        // The TLS peer refused us (an alert) or certificate verification failed; a
               // connection closed mid-handshake without an alert is kTransport.
};

const char* ErrorReasonName(ErrorReason reason);

// A failed request: HTTP status (0 when none arrived), the reason decoded from the metav1.Status
// body (or from the transport failure), and the server's message.
class ApiError : public std::runtime_error {
 public:
  ApiError(ErrorReason reason, int http_status, std::string message,
           std::optional<std::chrono::seconds> retry_after = std::nullopt);

  ErrorReason reason() const { return reason_; }
  int http_status() const { return http_status_; }
  const std::string& server_message() const { return message_; }
  std::optional<std::chrono::seconds> retry_after() const { return retry_after_; }

  // Worth retrying with backoff: 429, 5xx, timeouts and transport errors (not TLS).
  bool Transient() const;

 private:
  ErrorReason reason_;
  int http_status_;
  std::string message_;
  std::optional<std::chrono::seconds> retry_after_;
};

// Builds an ApiError from an HTTP status and a (possibly empty or non-JSON) body.
ApiError ErrorFromResponse(int http_status, const std::string& body,
                           std::optional<std::chrono::seconds> retry_after);

// Where a resource lives: core ("", "v1") or a group ("coordination.k8s.io", "v1").
struct Resource {
  std::string group;
  std::string version;
  std::string plural;  // "pods"
  bool namespaced = true;

  // "/api/v1/namespaces/ns/pods" or "/apis/g/v/plural" ...; empty ns: all namespaces.
  std::string Path(const std::string& ns = "", const std::string& name = "",
                   const std::string& subresource = "") const;
};

Resource PodsResource();
Resource NodesResource();
Resource EventsResource();  // events.k8s.io/v1
Resource LeasesResource();  // coordination.k8s.io/v1
// What the plugins' listers watch (pkg/api/resources.h).
Resource NamespacesResource();
Resource ServicesResource();
Resource ReplicationControllersResource();
Resource PersistentVolumeClaimsResource();
Resource PersistentVolumesResource();
Resource PodDisruptionBudgetsResource();  // policy/v1
Resource ReplicaSetsResource();           // apps/v1
Resource StatefulSetsResource();          // apps/v1
Resource StorageClassesResource();        // storage.k8s.io/v1
Resource CSINodesResource();              // storage.k8s.io/v1
Resource CSIDriversResource();            // storage.k8s.io/v1
Resource CSIStorageCapacitiesResource();  // storage.k8s.io/v1
Resource VolumeAttachmentsResource();     // storage.k8s.io/v1
Resource PodGroupsResource();             // scheduling.x-k8s.io/v1alpha1 (a custom resource)
Resource WorkloadPodGroupsResource();     // scheduling.k8s.io/v1beta1 (behind GenericWorkload)
// resource.k8s.io/v1: dynamic resource allocation.
Resource ResourceSlicesResource();
Resource DeviceClassesResource();
Resource ResourceClaimsResource();
Resource ResourceClaimTemplatesResource();
Resource DeviceTaintRulesResource();  // Behind the DRADeviceTaintRules feature gate.

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 500;           // Page size; 0: unpaged.
  std::string resource_version;  // "" most recent (quorum read), "0" any.
  // Ask for the protobuf encoding, JSON still accepted (pkg/api/protobuf.h reads both): for
  // core kinds the apiserver writes protobuf faster than JSON, and it is smaller.
  bool prefer_protobuf = false;
};

// One page of a LIST as served, parsed lazily by the caller.
struct ListPage {
  std::string body;
  std::string content_type;  // "application/json", "application/vnd.kubernetes.protobuf", ...
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  bool allow_bookmarks = true;
  int timeout_seconds = 300;  // Server closes the watch after this; the reflector re-watches.
  // As ListOptions::prefer_protobuf; events arrive decoded to JSON objects either way, except as
  // below.
  bool prefer_protobuf = false;
  // On a protobuf stream, pods of ADDED, MODIFIED and DELETED events arrive undecoded in
  // WatchEvent::protobuf_pod (see api::ParseProtobufWatchEvent).
  bool undecoded_protobuf_pods = false;
  // The watch is expected to carry events about as often as the client sends requests (pods
  // while they are being bound): it shares their connection. Any other watch goes on a second
  // connection kept for watches (internal::Request::quiet).
  bool busy = false;
};

// What a DELETE asks beyond its path: the metav1.DeleteOptions sent as its body.
struct DeleteOptions {
  // preconditions.uid: the apiserver deletes the object only while it has this uid and answers
  // 409 Conflict otherwise, so an object created anew under the same name (a StatefulSet's
  // replacement pod) is left alone, also when a retry of the DELETE arrives after it. Empty: no
  // precondition.
  std::string precondition_uid;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;
  // A v1.Pod message, `object` then being null: see WatchOptions::undecoded_protobuf_pods.
  std::string protobuf_pod;
};

// One open watch stream. Next() blocks the calling thread until an event arrives, the server ends
// the stream (returns false), or Stop() is called from another thread (returns false). A decode or
// transport failure throws ApiError.
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  virtual bool Next(WatchEvent* event) = 0;
  // Thread-safe; makes a blocked Next() return false promptly.
  virtual void Stop() = 0;
};

enum class PatchType { kMerge, kStrategicMerge, kJson };

// Observes every request once it completed, for metrics (verb is "GET", "LIST", "WATCH", ...).
using RequestObserver =
    std::function<void(const std::string& verb, int http_status, std::chrono::nanoseconds took)>;

// The answer to one PostRawAsync.
struct AsyncReply {
  std::string body;               // The 2xx response's body, when `error` is empty.
  std::optional<ApiError> error;  // Why the POST failed.
  // PostRaw would have tried again (after a backoff, or with fresh credentials): the caller may
  // send the request again with PostRaw, and then gets what one PostRaw would have given.
  bool retry_may_help = false;
};
using AsyncReplyHandler = std::function<void(AsyncReply)>;

// REST verbs against one apiserver. Thread-safe: share one per process. Every call is
// rate-limited by the client-side QPS/burst limiter (watches included when they open), and
// transient failures are retried with jittered backoff up to a bounded number of attempts.
class Client {
 public:
  virtual ~Client() = default;

  virtual nlohmann::json Get(const std::string& path) = 0;
  // One page of a LIST; `continue_token` empty for the first page.
  virtual ListPage ListPageRaw(const std::string& path, const ListOptions& options,
                               const std::string& continue_token) = 0;
  // The same page with its body handed to `on_bytes` piece by piece as it arrives, so the caller
  // decodes while the apiserver is still writing (a large pod list is tens of megabytes). An
  // error status is thrown as ApiError before any byte is handed over; a failure after that is
  // thrown without a retry, since the caller has seen part of the body. Exceptions from
  // `on_bytes` propagate. `content_type`, when given, is set to the response's Content-Type
  // before the first byte is handed over. This default hands over ListPageRaw's whole body at
  // once.
  virtual void ListPageStream(const std::string& path, const ListOptions& options,
                              const std::string& continue_token,
                              const std::function<void(std::string_view)>& on_bytes,
                              std::string* content_type = nullptr) {
    ListPage page = ListPageRaw(path, options, continue_token);
    if (content_type != nullptr) *content_type = std::move(page.content_type);
    on_bytes(page.body);
  }
  virtual nlohmann::json Post(const std::string& path, const nlohmann::json& body) = 0;
  // POST with a pre-encoded body, returning the raw response body (the binding fast path).
  virtual std::string PostRaw(const std::string& path, const std::string& body) = 0;
  // One try of PostRaw with no thread waiting for the answer. False, without `done` ever
  // running, when the try cannot start at once (no rate-limiter token, no request timeout, the
  // credentials need refreshing, or a client without this path, like this default): the caller
  // uses PostRaw instead. Else `done` runs exactly once, on the client's I/O thread, and must not
  // block: it holds up every request and watch of the client.
  virtual bool PostRawAsync(const std::string& /*path*/, std::string /*body*/,
                            AsyncReplyHandler /*done*/) {
    return false;
  }
  virtual nlohmann::json Patch(const std::string& path, const nlohmann::json& body,
                               PatchType type) = 0;
  // Replaces an object (or a subresource that only supports PUT, such as namespaces/finalize).
  virtual nlohmann::json Put(const std::string& path, const nlohmann::json& body) = 0;
  // Deletes what `path` names; `options` go in the body when any is set.
  virtual void Delete(const std::string& path, const DeleteOptions& options) = 0;
  void Delete(const std::string& path) { Delete(path, DeleteOptions{}); }
  virtual std::unique_ptr<WatchStream> Watch(const std::string& path,
                                             const WatchOptions& options) = 0;

  virtual const Config& config() const = 0;
  virtual void SetRequestObserver(RequestObserver observer) = 0;
};

// The HTTPS client over libcurl: HTTP/2 when the apiserver offers it, every request and watch of
// the client multiplexed over one connection (as client-go does), else keep-alive HTTP/1.1. TLS
// verification is on unless the config explicitly sets insecure_skip_tls_verify. A POST or PATCH
// whose response did not arrive is never sent again unless it provably never left (no connection,
// no TLS session, its body never handed to the connection). Throws ConfigError for an unusable
// server URL, proxy URL, CA bundle or client certificate/key. Ignores SIGPIPE unless the program
// handles it.
std::shared_ptr<Client> NewClient(Config config);

// The version string in the User-Agent and berth_build_info.
const char* BerthVersion();

}  // namespace berth::client

#endif  // BERTH_PKG_CLIENT_CLIENT_H_
