#include "pkg/plugins/registry/registry.h"

#include <mutex>
#include <stdexcept>

#include "pkg/plugins/coscheduling/coscheduling.h"
#include "pkg/plugins/defaultbinder/defaultbinder.h"
#include "pkg/plugins/defaultpreemption/defaultpreemption.h"
#include "pkg/plugins/imagelocality/image_locality.h"
#include "pkg/plugins/interpodaffinity/interpodaffinity.h"
#include "pkg/plugins/nodeaffinity/nodeaffinity.h"
#include "pkg/plugins/nodename/nodename.h"
#include "pkg/plugins/nodeports/nodeports.h"
#include "pkg/plugins/noderesources/balanced_allocation.h"
#include "pkg/plugins/noderesources/fit.h"
#include "pkg/plugins/nodeunschedulable/nodeunschedulable.h"
#include "pkg/plugins/nodevolumelimits/nodevolumelimits.h"
#include "pkg/plugins/podtopologyspread/podtopologyspread.h"
#include "pkg/plugins/prioritysort/prioritysort.h"
#include "pkg/plugins/schedulinggates/schedulinggates.h"
#include "pkg/plugins/tainttoleration/tainttoleration.h"
#include "pkg/plugins/volumebinding/volumebinding.h"
#include "pkg/plugins/volumerestrictions/volumerestrictions.h"
#include "pkg/plugins/volumezone/volumezone.h"

namespace berth::plugins::registry {
namespace {

// Filled during static initialization by Registration objects, read after main() starts.
framework::runtime::Registry& OutOfTree() {
  static framework::runtime::Registry plugins;
  return plugins;
}

std::mutex& OutOfTreeMutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

framework::runtime::Registry InTree() {
  return {
      {std::string(prioritysort::kName), prioritysort::New},
      {std::string(coscheduling::kName), coscheduling::New},
      {std::string(schedulinggates::kName), schedulinggates::New},
      {std::string(nodeunschedulable::kName), nodeunschedulable::New},
      {std::string(nodename::kName), nodename::New},
      {std::string(tainttoleration::kName), tainttoleration::New},
      {std::string(nodeaffinity::kName), nodeaffinity::New},
      {std::string(nodeports::kName), nodeports::New},
      {std::string(noderesources::kName), noderesources::New},
      {std::string(volumerestrictions::kName), volumerestrictions::New},
      {std::string(nodevolumelimits::kName), nodevolumelimits::New},
      {std::string(volumebinding::kName), volumebinding::New},
      {std::string(volumezone::kName), volumezone::New},
      {std::string(podtopologyspread::kName), podtopologyspread::New},
      {std::string(interpodaffinity::kName), interpodaffinity::New},
      {std::string(defaultpreemption::kName), defaultpreemption::New},
      {std::string(noderesources::kBalancedAllocationName), noderesources::NewBalancedAllocation},
      {std::string(imagelocality::kName), imagelocality::New},
      {std::string(defaultbinder::kName), defaultbinder::New},
  };
}

framework::runtime::Registry Registry() {
  auto all = InTree();
  std::lock_guard lock(OutOfTreeMutex());
  for (const auto& [name, factory] : OutOfTree()) {
    if (!all.emplace(name, factory).second) {
      throw std::logic_error("out-of-tree plugin \"" + name + "\" reuses an in-tree plugin name");
    }
  }
  return all;
}

Registration::Registration(std::string name, framework::PluginFactory factory) {
  std::lock_guard lock(OutOfTreeMutex());
  OutOfTree()[std::move(name)] = std::move(factory);
}

}  // namespace berth::plugins::registry
