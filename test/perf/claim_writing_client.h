#ifndef BERTH_TEST_PERF_CLAIM_WRITING_CLIENT_H_
#define BERTH_TEST_PERF_CLAIM_WRITING_CLIENT_H_

// The apiserver of scheduler_bench's DRA workloads: a client that holds ResourceClaims as JSON,
// answers the requests DynamicResources' PreBind makes (GET and merge PATCH of a claim, POST of
// the claim for a pod's extended resources with its generateName filled in, merge PATCH of the
// pod's status naming that claim) and delivers every claim change to the ResourceClaim informer
// before returning, as its watch would. Pod status patches are only remembered (no pod informer
// is fed from here: the benchmark's binder delivers the bound pod). Any other request is a bug in
// the benchmark or the plugin and aborts the run with the path.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "pkg/api/dra_codec.h"
#include "pkg/client/client.h"
#include "pkg/informer/informer.h"

namespace berth::perf {

// Thread-safe: the binding cycles write claims concurrently.
class ClaimWritingClient : public client::Client {
 public:
  // Must be called before any claim is created.
  void Attach(informer::Informer<api::ResourceClaim>* claims) { informer_ = claims; }

  // Stores `claim` (a ResourceClaim object) as created, with a fresh resourceVersion, and delivers
  // it to the informer.
  void Create(nlohmann::json claim) {
    const std::string key =
        claim["metadata"].value("namespace", "") + "/" + claim["metadata"].value("name", "");
    std::lock_guard lock(mu_);
    claim["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    Deliver(claims_[key] = std::move(claim));
  }

  // Deletes the claim stored under "namespace/name" and delivers the deletion to the informer, as
  // the resourceclaim controller and garbage collector end a deleted pod's claim. Returns whether
  // it was there.
  bool Remove(const std::string& key) {
    std::lock_guard lock(mu_);
    if (claims_.erase(key) == 0) return false;
    informer_->Remove(key);
    return true;
  }

  // The claim the pod's status names for its extended resources ("" if none was patched in).
  std::string ExtendedClaimName(const std::string& pod_key) const {
    std::lock_guard lock(mu_);
    auto it = extended_claims_.find(pod_key);
    return it == extended_claims_.end() ? "" : it->second;
  }

  int writes() const {
    std::lock_guard lock(mu_);
    return writes_;
  }

  nlohmann::json Get(const std::string& path) override {
    std::lock_guard lock(mu_);
    return Find(path);
  }

  // A merge patch of the claim or of its status (the apiserver would keep a status patch from
  // changing anything else; PreBind's never tries to). A resourceVersion in the patch is a
  // precondition, as the apiserver checks it.
  nlohmann::json Patch(const std::string& path, const nlohmann::json& body,
                       client::PatchType type) override {
    if (type != client::PatchType::kMerge) Unexpected(path);
    std::lock_guard lock(mu_);
    if (std::optional<std::string> pod = PodStatusKey(path)) {
      writes_++;
      const nlohmann::json* name = nullptr;
      if (auto status = body.find("status"); status != body.end()) {
        if (auto e = status->find("extendedResourceClaimStatus"); e != status->end()) {
          if (auto n = e->find("resourceClaimName"); n != e->end()) name = &*n;
        }
      }
      if (name == nullptr || !name->is_string()) Unexpected(path);
      extended_claims_[*pod] = name->get<std::string>();
      return {{"metadata", {{"name", pod->substr(pod->find('/') + 1)}}},
              {"status", body["status"]}};
    }
    nlohmann::json& claim = Find(path);
    nlohmann::json patch = body;
    if (auto meta = patch.find("metadata"); meta != patch.end()) {
      if (auto rv = meta->find("resourceVersion"); rv != meta->end()) {
        if (*rv != claim["metadata"]["resourceVersion"]) {
          throw client::ApiError(client::ErrorReason::kConflict, 409,
                                 "the object has been modified");
        }
        meta->erase(rv);
      }
    }
    claim.merge_patch(patch);
    claim["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    writes_++;
    Deliver(claim);
    return claim;
  }

  client::ListPage ListPageRaw(const std::string& path, const client::ListOptions&,
                               const std::string&) override {
    Unexpected(path);
  }
  // Creates a claim; a generateName becomes a name with a counter appended (unique, as the
  // apiserver's random suffix is).
  nlohmann::json Post(const std::string& path, const nlohmann::json& body) override {
    constexpr std::string_view kPrefix = "/apis/resource.k8s.io/v1/namespaces/";
    constexpr std::string_view kClaims = "/resourceclaims";
    if (path.rfind(kPrefix, 0) != 0 || !path.ends_with(kClaims)) Unexpected(path);
    const std::string ns =
        path.substr(kPrefix.size(), path.size() - kPrefix.size() - kClaims.size());
    nlohmann::json claim = body;
    nlohmann::json& meta = claim["metadata"];
    if (meta.value("namespace", ns) != ns) Unexpected(path);
    meta["namespace"] = ns;
    std::lock_guard lock(mu_);
    if (!meta.contains("name")) {
      meta["name"] = meta.value("generateName", "") + std::to_string(++generated_);
    }
    const std::string key = ns + "/" + meta["name"].get<std::string>();
    if (claims_.contains(key)) {
      throw client::ApiError(client::ErrorReason::kAlreadyExists, 409, key + " already exists");
    }
    meta["uid"] = "uid-" + ns + "-" + meta["name"].get<std::string>();
    meta["resourceVersion"] = std::to_string(++resource_version_);
    writes_++;
    nlohmann::json& stored = claims_[key] = std::move(claim);
    Deliver(stored);
    return stored;
  }
  std::string PostRaw(const std::string& path, const std::string&) override { Unexpected(path); }
  nlohmann::json Put(const std::string& path, const nlohmann::json&) override { Unexpected(path); }
  void Delete(const std::string& path, const client::DeleteOptions&) override { Unexpected(path); }
  std::unique_ptr<client::WatchStream> Watch(const std::string& path,
                                             const client::WatchOptions&) override {
    Unexpected(path);
  }
  const client::Config& config() const override { return config_; }
  void SetRequestObserver(client::RequestObserver) override {}

 private:
  [[noreturn]] static void Unexpected(const std::string& path) {
    std::fprintf(stderr, "unexpected apiserver call in the benchmark: %s\n", path.c_str());
    std::abort();
  }

  // The stored claim a claim (or claim status) path names. Requires mu_.
  nlohmann::json& Find(const std::string& path) {
    // "/apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>[/status]".
    constexpr std::string_view kPrefix = "/apis/resource.k8s.io/v1/namespaces/";
    constexpr std::string_view kClaims = "/resourceclaims/";
    std::string_view rest(path);
    if (rest.rfind(kPrefix, 0) != 0) Unexpected(path);
    rest.remove_prefix(kPrefix.size());
    const size_t claims = rest.find(kClaims);
    if (claims == std::string_view::npos) Unexpected(path);
    std::string_view name = rest.substr(claims + kClaims.size());
    if (name.ends_with("/status")) name.remove_suffix(std::string_view("/status").size());
    const std::string key = std::string(rest.substr(0, claims)) + "/" + std::string(name);
    auto it = claims_.find(key);
    if (it == claims_.end()) {
      throw client::ApiError(client::ErrorReason::kNotFound, 404, "claim " + key + " not found");
    }
    return it->second;
  }

  // "namespace/name" of a pod status path ("/api/v1/namespaces/<ns>/pods/<name>/status").
  static std::optional<std::string> PodStatusKey(std::string_view path) {
    constexpr std::string_view kPrefix = "/api/v1/namespaces/";
    constexpr std::string_view kPods = "/pods/";
    constexpr std::string_view kStatus = "/status";
    if (path.rfind(kPrefix, 0) != 0 || !path.ends_with(kStatus)) return std::nullopt;
    path.remove_prefix(kPrefix.size());
    path.remove_suffix(kStatus.size());
    const size_t pods = path.find(kPods);
    if (pods == std::string_view::npos) return std::nullopt;
    return std::string(path.substr(0, pods)) + "/" + std::string(path.substr(pods + kPods.size()));
  }

  // Requires mu_, so the informer sees the versions in the order they were made.
  void Deliver(const nlohmann::json& claim) {
    informer_->Upsert(std::make_shared<const api::ResourceClaim>(api::DecodeResourceClaim(claim)));
  }

  informer::Informer<api::ResourceClaim>* informer_ = nullptr;
  mutable std::mutex mu_;
  // Guarded by mu_. Keys are "namespace/name".
  std::unordered_map<std::string, nlohmann::json> claims_;
  // The claim each pod's status names for its extended resources, by pod "namespace/name".
  std::unordered_map<std::string, std::string> extended_claims_;
  uint64_t resource_version_ = 0;
  uint64_t generated_ = 0;
  int writes_ = 0;
  client::Config config_;
};

}  // namespace berth::perf

#endif  // BERTH_TEST_PERF_CLAIM_WRITING_CLIENT_H_
