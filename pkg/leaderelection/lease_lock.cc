#include "pkg/leaderelection/lease_lock.h"

#include <stdexcept>
#include <utility>

namespace berth::leaderelection {
namespace {

std::string StringField(const nlohmann::json& spec, const char* key) {
  const auto it = spec.find(key);
  return it != spec.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t IntField(const nlohmann::json& spec, const char* key) {
  const auto it = spec.find(key);
  return it != spec.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

nlohmann::json LeaseSpecFromRecord(const LeaseRecord& record) {
  return {{"holderIdentity", record.holder_identity},
          {"leaseDurationSeconds", record.lease_duration_seconds},
          {"acquireTime", record.acquire_time},
          {"renewTime", record.renew_time},
          {"leaseTransitions", record.lease_transitions}};
}

LeaseRecord RecordFromLeaseSpec(const nlohmann::json& spec) {
  LeaseRecord record;
  if (!spec.is_object()) return record;
  record.holder_identity = StringField(spec, "holderIdentity");
  record.lease_duration_seconds = IntField(spec, "leaseDurationSeconds");
  record.acquire_time = StringField(spec, "acquireTime");
  record.renew_time = StringField(spec, "renewTime");
  record.lease_transitions = IntField(spec, "leaseTransitions");
  return record;
}

LeaseLock::LeaseLock(std::shared_ptr<client::Client> client, std::string ns, std::string name)
    : client_(std::move(client)), ns_(std::move(ns)), name_(std::move(name)) {}

std::optional<LeaseRecord> LeaseLock::Get() {
  nlohmann::json lease;
  try {
    lease = client_->Get(client::LeasesResource().Path(ns_, name_));
  } catch (const client::ApiError& e) {
    if (e.reason() == client::ErrorReason::kNotFound) return std::nullopt;
    throw;
  }
  LeaseRecord record = RecordFromLeaseSpec(lease.value("spec", nlohmann::json::object()));
  last_ = std::move(lease);
  return record;
}

void LeaseLock::Create(const LeaseRecord& record) {
  const nlohmann::json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", name_}, {"namespace", ns_}}},
      {"spec", LeaseSpecFromRecord(record)},
  };
  last_ = client_->Post(client::LeasesResource().Path(ns_), lease);
}

void LeaseLock::Update(const LeaseRecord& record) {
  if (!last_.is_object()) {
    throw std::logic_error("lease " + Describe() + " updated before it was read or created");
  }
  nlohmann::json lease = last_;
  lease["apiVersion"] = "coordination.k8s.io/v1";
  lease["kind"] = "Lease";
  lease["spec"] = LeaseSpecFromRecord(record);
  last_ = client_->Put(client::LeasesResource().Path(ns_, name_), lease);
}

}  // namespace berth::leaderelection
