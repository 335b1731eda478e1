#ifndef BERTH_PKG_LEADERELECTION_LEASE_LOCK_H_
#define BERTH_PKG_LEADERELECTION_LEASE_LOCK_H_

// A coordination.k8s.io/v1 Lease used as the leader-election lock, and the election record its
// spec carries (client-go's resourcelock.LeaseLock and LeaderElectionRecord).

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "pkg/client/client.h"

namespace berth::leaderelection {

// The election state in a Lease's spec. The timestamps are kept exactly as written: electors
// never compare them with their own clock (that would make the election depend on clock skew),
// they only notice that the record changed.
struct LeaseRecord {
  std::string holder_identity;  // Empty: nobody holds the lease; any candidate may take it.
  int64_t lease_duration_seconds = 0;
  std::string acquire_time;  // metav1.MicroTime
  std::string renew_time;    // metav1.MicroTime
  int64_t lease_transitions = 0;

  bool operator==(const LeaseRecord&) const = default;
};

// The Lease spec for `record` (every field present).
nlohmann::json LeaseSpecFromRecord(const LeaseRecord& record);
// The record in a Lease spec; absent or null fields read as empty/zero.
LeaseRecord RecordFromLeaseSpec(const nlohmann::json& spec);

// One Lease object on the apiserver. Remembers the object it last read or wrote, so Update
// replaces exactly that version: the PUT carries its metadata.resourceVersion and fails with
// Conflict when anyone else wrote in between.
// Not thread-safe: callers serialize all calls (the elector runs them on one worker at a time).
class LeaseLock {
 public:
  LeaseLock(std::shared_ptr<client::Client> client, std::string ns, std::string name);

  // The current record; nullopt when the Lease does not exist. Throws client::ApiError.
  std::optional<LeaseRecord> Get();
  // POSTs a new Lease holding `record`. Throws client::ApiError (AlreadyExists when another
  // candidate created it first; NotFound when the namespace does not exist).
  void Create(const LeaseRecord& record);
  // PUTs the last read or written object with its spec replaced by `record`. Throws
  // client::ApiError (Conflict when it changed since), or std::logic_error before any successful
  // Get/Create.
  void Update(const LeaseRecord& record);

  const std::string& lease_namespace() const { return ns_; }
  const std::string& lease_name() const { return name_; }
  // "namespace/name", as the log lines name the lock.
  std::string Describe() const { return ns_ + "/" + name_; }

 private:
  std::shared_ptr<client::Client> client_;
  const std::string ns_;
  const std::string name_;
  nlohmann::json last_;  // The Lease as last read or written; null before the first success.
};

}  // namespace berth::leaderelection

#endif  // BERTH_PKG_LEADERELECTION_LEASE_LOCK_H_
