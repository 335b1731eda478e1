#ifndef BERTH_TEST_PERF_CLAIM_WRITING_CLIENT_H_
#define BERTH_TEST_PERF_CLAIM_WRITING_CLIENT_H_

// The apiserver of scheduler_bench's DRA workloads: a client that holds ResourceClaims as JSON,
// answers the GET and merge PATCH requests DynamicResources' PreBind makes, and delivers every
// change to the ResourceClaim informer before returning, as its watch would.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
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
  nlohmann::json Post(const std::string& path, const nlohmann::json&) override { Unexpected(path); }
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

  // Requires mu_, so the informer sees the versions in the order they were made.
  void Deliver(const nlohmann::json& claim) {
    informer_->Upsert(std::make_shared<const api::ResourceClaim>(api::DecodeResourceClaim(claim)));
  }

  informer::Informer<api::ResourceClaim>* informer_ = nullptr;
  mutable std::mutex mu_;
  // Guarded by mu_. Keys are "namespace/name".
  std::unordered_map<std::string, nlohmann::json> claims_;
  uint64_t resource_version_ = 0;
  int writes_ = 0;
  client::Config config_;
};

}  // namespace berth::perf

#endif  // BERTH_TEST_PERF_CLAIM_WRITING_CLIENT_H_
