#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/noderesources/fit.h"

// NodeResourcesFit's hints (framework::HintPlugin), apart from the Filter they explain: sharing
// its translation unit changed how the compiler inlined Filter's hot path.

namespace berth::plugins::noderesources {

std::string HumanAmount(std::string_view resource, int64_t amount, int64_t* rounded) {
  *rounded = amount;
  if (resource == api::kResourceCPU) {
    if (amount < 1000) return std::to_string(amount) + "m";
    // Whole cores, or cores with the millis as decimals: "2", "52.3", "1.25".
    std::string fraction = std::to_string(1000 + amount % 1000).substr(1);
    while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
    return std::to_string(amount / 1000) + (fraction.empty() ? "" : "." + fraction);
  }
  if (resource == api::kResourceMemory || resource == api::kResourceEphemeralStorage ||
      resource.rfind("hugepages-", 0) == 0) {
    constexpr std::array<std::pair<int64_t, std::string_view>, 3> kUnits = {
        {{int64_t{1} << 30, "Gi"}, {int64_t{1} << 20, "Mi"}, {int64_t{1} << 10, "Ki"}}};
    for (const auto& [unit, suffix] : kUnits) {
      if (amount % unit == 0) return std::to_string(amount / unit) + std::string(suffix);
    }
    // Not a whole number of any unit: rounded up to the largest unit that keeps it within a
    // tenth of the exact amount, or to Ki.
    for (const auto& [unit, suffix] : kUnits) {
      const int64_t units = (amount + unit - 1) / unit;
      if (units >= 10 || unit == kUnits.back().first) {
        *rounded = units * unit;
        return std::to_string(units) + std::string(suffix);
      }
    }
  }
  return std::to_string(amount);
}

std::vector<framework::PodChange> Fit::SuggestChanges(
    const framework::CycleState&, const api::Pod& pod,
    std::span<const framework::NodeInfo* const> rejected, std::span<const framework::Status* const>,
    const framework::Status*) const {
  struct Shortfall {
    const framework::NodeInfo* node;
    // Resource and how much of it the node lacks for the pod, in ForEachShortfall's order.
    std::vector<std::pair<std::string, int64_t>> lacks;
    // The lacks as fractions of the pod's requests, summed: how far the node is from fitting.
    double distance = 0;
  };
  std::vector<Shortfall> shortfalls;
  for (const framework::NodeInfo* node : rejected) {
    Shortfall s{node, {}, 0};
    bool helpable = true;
    for (const InsufficientResource& r :
         FitsRequest(pod.requests, node->allocatable(), node->requested(), node->pods().size(),
                     *ignored_)) {
      const int64_t lack = r.requested - (r.capacity - r.used);
      // The pod count is not the pod's to reduce, and a node that lacks the whole request
      // would need none of it.
      if (r.resource_name == api::kResourcePods || lack >= r.requested) {
        helpable = false;
        break;
      }
      s.lacks.emplace_back(r.resource_name, lack);
      s.distance += static_cast<double>(lack) / static_cast<double>(r.requested);
    }
    if (helpable && !s.lacks.empty()) shortfalls.push_back(std::move(s));
  }
  if (shortfalls.empty()) return {};
  std::sort(shortfalls.begin(), shortfalls.end(), [](const Shortfall& a, const Shortfall& b) {
    if (a.distance != b.distance) return a.distance < b.distance;
    return a.node->name() < b.node->name();
  });
  // "cpu 300m and memory 128Mi" (with `suffix` after each resource name), and the amounts
  // the text stands for.
  auto describe = [](const std::vector<std::pair<std::string, int64_t>>& lacks,
                     std::string_view suffix,
                     std::vector<std::pair<std::string, int64_t>>* rounded) {
    std::string out;
    for (size_t i = 0; i < lacks.size(); i++) {
      int64_t amount = 0;
      std::string text = HumanAmount(lacks[i].first, lacks[i].second, &amount);
      if (rounded) rounded->emplace_back(lacks[i].first, amount);
      if (i > 0) out += i + 1 == lacks.size() ? " and " : ", ";
      out += lacks[i].first + std::string(suffix) + text;
    }
    return out;
  };
  framework::PodChange change;
  std::vector<std::pair<std::string, int64_t>> reductions;
  change.description = "reduce " + describe(shortfalls.front().lacks, " request by ", &reductions);
  change.apply = [reductions](api::Pod& p) {
    for (const auto& [name, amount] : reductions) {
      p.requests.Set(name, std::max<int64_t>(0, p.requests.Get(name) - amount));
      if (name == api::kResourceCPU) {
        p.non_zero_milli_cpu = std::max<int64_t>(0, p.non_zero_milli_cpu - amount);
      } else if (name == api::kResourceMemory) {
        p.non_zero_memory = std::max<int64_t>(0, p.non_zero_memory - amount);
      }
    }
  };
  constexpr size_t kClosest = 3;
  for (size_t i = 0; i < shortfalls.size() && i < kClosest; i++) {
    change.details.emplace_back(shortfalls[i].node->name(),
                                describe(shortfalls[i].lacks, " ", nullptr) + " short");
  }
  return {std::move(change)};
}

}  // namespace berth::plugins::noderesources
