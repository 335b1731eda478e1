#include "pkg/plugins/helper/key_column.h"

namespace berth::plugins::helper {

int32_t KeyColumn::Find(std::string_view value) const {
  if (values_.size() <= kScanMax) {
    for (size_t i = 0; i < values_.size(); i++) {
      if (values_[i] == value) return static_cast<int32_t>(i);
    }
    return -1;
  }
  auto it = ids_.find(value);
  return it == ids_.end() ? -1 : it->second;
}

int32_t KeyColumn::Intern(std::string_view value) {
  int32_t id = Find(value);
  if (id >= 0) return id;
  id = static_cast<int32_t>(values_.size());
  values_.emplace_back(value);
  ids_.emplace(values_.back(), id);
  return id;
}

int32_t KeyColumn::InternNode(const framework::NodeInfo& info) {
  const api::Node* node = info.node();
  const std::string* value = node != nullptr ? node->meta.labels.Find(key_) : nullptr;
  return value != nullptr ? Intern(*value) : -1;
}

void KeyColumn::Fill(const std::vector<framework::NodeInfoPtr>& nodes) {
  node_values.assign(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); i++) node_values[i] = InternNode(*nodes[i]);
}

}  // namespace berth::plugins::helper
