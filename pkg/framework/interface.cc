#include "pkg/framework/interface.h"

namespace berth::framework {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kSuccess:
      return "Success";
    case Code::kError:
      return "Error";
    case Code::kUnschedulable:
      return "Unschedulable";
    case Code::kUnschedulableAndUnresolvable:
      return "UnschedulableAndUnresolvable";
    case Code::kWait:
      return "Wait";
    case Code::kSkip:
      return "Skip";
    case Code::kPending:
      return "Pending";
  }
  return "Unknown";
}

std::string Status::Message() const {
  std::string out;
  for (const auto& reason : reasons_) {
    if (!out.empty()) out += ", ";
    out += reason;
  }
  return out;
}

void CycleState::Write(const std::string& key, std::shared_ptr<StateData> data) {
  std::unique_lock lock(mu_);
  data_[key] = std::move(data);
}

std::shared_ptr<StateData> CycleState::ReadData(const std::string& key) const {
  std::shared_lock lock(mu_);
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : it->second;
}

void CycleState::Delete(const std::string& key) {
  std::unique_lock lock(mu_);
  data_.erase(key);
}

std::unique_ptr<CycleState> CycleState::Clone() const {
  auto copy = std::make_unique<CycleState>();
  std::shared_lock lock(mu_);
  for (const auto& [key, data] : data_) copy->data_[key] = data ? data->Clone() : nullptr;
  copy->skip_filter_plugins = skip_filter_plugins;
  copy->skip_score_plugins = skip_score_plugins;
  copy->record_plugin_metrics = record_plugin_metrics;
  return copy;
}

bool ClusterEvent::Matches(const ClusterEvent& other) const {
  if (resource != EventResource::kWildcard && resource != other.resource) return false;
  return (actions & other.actions) != 0;
}

}  // namespace berth::framework
