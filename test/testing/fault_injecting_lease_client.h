#ifndef BERTH_TEST_TESTING_FAULT_INJECTING_LEASE_CLIENT_H_
#define BERTH_TEST_TESTING_FAULT_INJECTING_LEASE_CLIENT_H_

// Test-only. An in-memory apiserver for Lease objects that can fail on demand in the ways a real
// one only does by accident: unreachable, hanging, Forbidden, conflicting writes, a missing
// namespace. Everything else follows the apiserver: GET 404 when absent, POST AlreadyExists,
// PUT with a stale metadata.resourceVersion is a Conflict (without one it is unconditional),
// every write bumps resourceVersion, leaseDurationSeconds must be > 0. The behaviour without
// faults is what test/integration/leader_election_integration_test.cc checks against the real
// apiserver.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pkg/client/client.h"
#include "test/testing/unused_client.h"

namespace berth::testing {

// Thread-safe.
class FaultInjectingLeaseClient : public UnusedClient {
 public:
  // Serves leases in `ns` only (other namespaces are "not found" like a missing namespace).
  explicit FaultInjectingLeaseClient(std::string ns = "kube-system") : ns_(std::move(ns)) {}

  nlohmann::json Get(const std::string& path) override {
    std::unique_lock lock(mu_);
    Enter(lock, "get");
    const auto it = leases_.find(path);
    if (it == leases_.end()) {
      throw client::ApiError(client::ErrorReason::kNotFound, 404, Quoted(path) + " not found");
    }
    return it->second;
  }

  nlohmann::json Post(const std::string& collection, const nlohmann::json& body) override {
    std::unique_lock lock(mu_);
    Enter(lock, "create");
    if (collection != client::LeasesResource().Path(ns_) || namespace_missing_) {
      throw client::ApiError(
          client::ErrorReason::kNotFound, 404,
          "namespaces \"" + body["metadata"].value("namespace", "") + "\" not found");
    }
    const std::string path = collection + "/" + body["metadata"].value("name", "");
    if (leases_.count(path) != 0) {
      throw client::ApiError(client::ErrorReason::kAlreadyExists, 409,
                             Quoted(path) + " already exists");
    }
    Validate(body);
    posts_++;
    nlohmann::json stored = body;
    stored["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    stored["metadata"]["uid"] = "uid-" + std::to_string(resource_version_);
    leases_[path] = stored;
    return stored;
  }

  nlohmann::json Put(const std::string& path, const nlohmann::json& body) override {
    std::unique_lock lock(mu_);
    Enter(lock, "update");
    const auto it = leases_.find(path);
    if (it == leases_.end()) {
      throw client::ApiError(client::ErrorReason::kNotFound, 404, Quoted(path) + " not found");
    }
    const std::string sent_version = body["metadata"].value("resourceVersion", "");
    puts_without_version_ += sent_version.empty() ? 1 : 0;
    if (conflicts_to_inject_ > 0) {
      // What a concurrent writer does: the object moves on, this write loses.
      conflicts_to_inject_--;
      it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    }
    if (!sent_version.empty() && sent_version != it->second["metadata"]["resourceVersion"]) {
      throw client::ApiError(
          client::ErrorReason::kConflict, 409,
          "Operation cannot be fulfilled on " + Quoted(path) + ": the object has been modified");
    }
    Validate(body);
    nlohmann::json stored = body;
    stored["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    it->second = stored;
    written_specs_.push_back(stored["spec"]);
    return stored;
  }

  // --- faults -----------------------------------------------------------------------------
  // Every request fails as a refused connection.
  void SetUnreachable(bool on) {
    std::lock_guard lock(mu_);
    unreachable_ = on;
  }
  // Every request is rejected by RBAC.
  void SetForbidden(bool on) {
    std::lock_guard lock(mu_);
    forbidden_ = on;
  }
  // Creating fails as when the lease's namespace does not exist.
  void SetNamespaceMissing(bool on) {
    std::lock_guard lock(mu_);
    namespace_missing_ = on;
  }
  // The next `n` PUTs find that someone else wrote the lease just before (Conflict).
  void InjectConflicts(int n) {
    std::lock_guard lock(mu_);
    conflicts_to_inject_ = n;
  }
  // Requests block (as against a black-holed apiserver) until SetHanging(false).
  void SetHanging(bool on) {
    {
      std::lock_guard lock(mu_);
      hanging_ = on;
    }
    cv_.notify_all();
  }

  // --- the test's view ----------------------------------------------------------------------
  std::string LeasePath(const std::string& name) const {
    return client::LeasesResource().Path(ns_, name);
  }
  std::optional<nlohmann::json> Lease(const std::string& name) const {
    std::lock_guard lock(mu_);
    const auto it = leases_.find(LeasePath(name));
    if (it == leases_.end()) return std::nullopt;
    return it->second;
  }
  // Writes the lease's spec as another client would (creating it when absent).
  void WriteSpec(const std::string& name, const nlohmann::json& spec) {
    std::lock_guard lock(mu_);
    nlohmann::json& lease = leases_[LeasePath(name)];
    lease["apiVersion"] = "coordination.k8s.io/v1";
    lease["kind"] = "Lease";
    lease["metadata"]["name"] = name;
    lease["metadata"]["namespace"] = ns_;
    lease["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    lease["spec"] = spec;
  }
  // Specs of successful PUTs, oldest first.
  std::vector<nlohmann::json> WrittenSpecs() const {
    std::lock_guard lock(mu_);
    return written_specs_;
  }
  int64_t Requests(const std::string& verb) const {
    std::lock_guard lock(mu_);
    const auto it = requests_.find(verb);
    return it == requests_.end() ? 0 : it->second;
  }
  int64_t FailedRequests() const {
    std::lock_guard lock(mu_);
    return failed_;
  }
  int64_t HangingRequests() const {
    std::lock_guard lock(mu_);
    return hanging_now_;
  }
  int64_t Posts() const {
    std::lock_guard lock(mu_);
    return posts_;
  }
  int64_t PutsWithoutResourceVersion() const {
    std::lock_guard lock(mu_);
    return puts_without_version_;
  }

 private:
  // Counts the request and applies the faults that precede any processing.
  void Enter(std::unique_lock<std::mutex>& lock, const std::string& verb) {
    requests_[verb]++;
    hanging_now_++;
    cv_.wait(lock, [this] { return !hanging_; });
    hanging_now_--;
    if (unreachable_) {
      failed_++;
      throw client::ApiError(client::ErrorReason::kTransport, 0,
                             "dial tcp 127.0.0.1:6443: connect: connection refused");
    }
    if (forbidden_) {
      failed_++;
      throw client::ApiError(client::ErrorReason::kForbidden, 403,
                             "leases.coordination.k8s.io is forbidden: User \"test\" cannot " +
                                 verb +
                                 " resource \"leases\" in API group \"coordination.k8s.io\"" +
                                 " in the namespace \"" + ns_ + "\"");
    }
  }

  static void Validate(const nlohmann::json& lease) {
    const auto& spec = lease.value("spec", nlohmann::json::object());
    if (spec.contains("leaseDurationSeconds") && spec["leaseDurationSeconds"].get<int64_t>() <= 0) {
      throw client::ApiError(client::ErrorReason::kInvalid, 422,
                             "spec.leaseDurationSeconds: Invalid value: must be greater than 0");
    }
  }

  static std::string Quoted(const std::string& path) {
    return "leases.coordination.k8s.io \"" + path.substr(path.rfind('/') + 1) + "\"";
  }

  const std::string ns_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, nlohmann::json> leases_;  // By path.
  uint64_t resource_version_ = 100;
  bool unreachable_ = false, forbidden_ = false, namespace_missing_ = false, hanging_ = false;
  int conflicts_to_inject_ = 0;
  std::map<std::string, int64_t> requests_;
  int64_t failed_ = 0, hanging_now_ = 0, posts_ = 0, puts_without_version_ = 0;
  std::vector<nlohmann::json> written_specs_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_FAULT_INJECTING_LEASE_CLIENT_H_
