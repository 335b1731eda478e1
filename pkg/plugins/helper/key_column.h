#ifndef BERTH_PKG_PLUGINS_HELPER_KEY_COLUMN_H_
#define BERTH_PKG_PLUGINS_HELPER_KEY_COLUMN_H_

// One node label key's value on every node of the snapshot's list, the values interned, so that
// plugins that read the same label of every node in every cycle (a topology key) read an id from
// a vector by the node's list position instead of searching the node's labels and hashing the text.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pkg/framework/types.h"

namespace berth::plugins::helper {

// A value's id is its index in values(). Ids stay valid for the column's life; a column is never
// shrunk (its owner replaces a column whose dictionary grew stale with a new one, so that a cycle
// holding the old one keeps it).
//
// Not thread-safe for writers: Intern and node_values are written only on the scheduling thread
// by the column's owner, never while the Filter or Score of a cycle run. Find is then safe from
// any number of threads.
class KeyColumn {
 public:
  explicit KeyColumn(std::string key) : key_(std::move(key)) {}

  const std::string& key() const { return key_; }
  // -1 when the value was never interned.
  int32_t Find(std::string_view value) const;
  int32_t Intern(std::string_view value);
  size_t size() const { return values_.size(); }
  const std::string& value(int32_t id) const { return values_[static_cast<size_t>(id)]; }

  // The id of the node's value of the key; -1 when the node lacks the label.
  int32_t InternNode(const framework::NodeInfo& info);
  // Sets node_values for every node of `nodes`.
  void Fill(const std::vector<framework::NodeInfoPtr>& nodes);
  // Whether the dictionary holds many values no node has any more (nodes come and go), so that
  // the owner should replace the column by a fresh one.
  bool Stale() const { return values_.size() > 2 * node_values.size() + 64; }

  // The id of each node's value, by position in the owner's node list; -1 when the node lacks
  // the label.
  std::vector<int32_t> node_values;

 private:
  // Up to this many values are found by a scan, cheaper than hashing (zones, regions).
  static constexpr size_t kScanMax = 8;

  std::string key_;
  // A deque, so the views in ids_ stay valid as values are added.
  std::deque<std::string> values_;
  std::unordered_map<std::string_view, int32_t> ids_;
};
using KeyColumnPtr = std::shared_ptr<KeyColumn>;

}  // namespace berth::plugins::helper

#endif  // BERTH_PKG_PLUGINS_HELPER_KEY_COLUMN_H_
