#include "pkg/plugins/registry/registry.h"

#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "pkg/framework/args.h"
#include "pkg/plugins/coscheduling/coscheduling.h"
#include "pkg/plugins/defaultbinder/defaultbinder.h"
#include "pkg/plugins/defaultpreemption/defaultpreemption.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"
#include "pkg/plugins/imagelocality/image_locality.h"
#include "pkg/plugins/interpodaffinity/interpodaffinity.h"
#include "pkg/plugins/nodeaffinity/nodeaffinity.h"
#include "pkg/plugins/nodedeclaredfeatures/nodedeclaredfeatures.h"
#include "pkg/plugins/nodename/nodename.h"
#include "pkg/plugins/nodeports/nodeports.h"
#include "pkg/plugins/noderesources/balanced_allocation.h"
#include "pkg/plugins/noderesources/fit.h"
#include "pkg/plugins/nodeunschedulable/nodeunschedulable.h"
#include "pkg/plugins/nodevolumelimits/nodevolumelimits.h"
#include "pkg/plugins/outofprocess/outofprocess.h"
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
      {std::string(nodedeclaredfeatures::kName), nodedeclaredfeatures::New},
      {std::string(noderesources::kName), noderesources::New},
      {std::string(volumerestrictions::kName), volumerestrictions::New},
      {std::string(nodevolumelimits::kName), nodevolumelimits::New},
      {std::string(volumebinding::kName), volumebinding::New},
      {std::string(volumezone::kName), volumezone::New},
      {std::string(podtopologyspread::kName), podtopologyspread::New},
      {std::string(interpodaffinity::kName), interpodaffinity::New},
      {std::string(dynamicresources::kName), dynamicresources::New},
      {std::string(defaultpreemption::kName), defaultpreemption::New},
      {std::string(noderesources::kBalancedAllocationName), noderesources::NewBalancedAllocation},
      {std::string(imagelocality::kName), imagelocality::New},
      {std::string(defaultbinder::kName), defaultbinder::New},
      {std::string(outofprocess::kName), outofprocess::New},
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

std::vector<config::ConfigIssue> ValidateArgs(const std::string& plugin,
                                              const nlohmann::json& args) {
  using Parser = std::function<void(const nlohmann::json&)>;
  // Each in-tree plugin's args parser, the one its factory runs; plugins that take no args check
  // for that alone.
  static const std::map<std::string_view, Parser> kParsers = {
      {coscheduling::kName, [](const nlohmann::json& a) { coscheduling::ParseArgs(a); }},
      {defaultpreemption::kName, [](const nlohmann::json& a) { defaultpreemption::ParseArgs(a); }},
      {dynamicresources::kName, [](const nlohmann::json& a) { dynamicresources::ParseArgs(a); }},
      {interpodaffinity::kName, [](const nlohmann::json& a) { interpodaffinity::ParseArgs(a); }},
      {nodeaffinity::kName, [](const nlohmann::json& a) { nodeaffinity::ParseArgs(a); }},
      {noderesources::kName, [](const nlohmann::json& a) { noderesources::ParseFitArgs(a); }},
      {noderesources::kBalancedAllocationName,
       [](const nlohmann::json& a) { noderesources::ParseBalancedAllocationArgs(a); }},
      {podtopologyspread::kName, [](const nlohmann::json& a) { podtopologyspread::ParseArgs(a); }},
      {outofprocess::kName, [](const nlohmann::json& a) { outofprocess::ParseArgs(a); }},
      {volumebinding::kName, [](const nlohmann::json& a) { volumebinding::ParseArgs(a); }},
      {prioritysort::kName, framework::ExpectNoArgs},
      {schedulinggates::kName, framework::ExpectNoArgs},
      {nodeunschedulable::kName, framework::ExpectNoArgs},
      {nodename::kName, framework::ExpectNoArgs},
      {tainttoleration::kName, framework::ExpectNoArgs},
      {nodeports::kName, framework::ExpectNoArgs},
      {nodedeclaredfeatures::kName, framework::ExpectNoArgs},
      {volumerestrictions::kName, framework::ExpectNoArgs},
      {nodevolumelimits::kName, framework::ExpectNoArgs},
      {volumezone::kName, framework::ExpectNoArgs},
      {imagelocality::kName, framework::ExpectNoArgs},
      {defaultbinder::kName, framework::ExpectNoArgs},
  };
  auto parser = kParsers.find(plugin);
  if (parser == kParsers.end()) return {};
  try {
    parser->second(args);
  } catch (const framework::InvalidArgs& e) {
    std::vector<config::ConfigIssue> issues;
    for (const framework::ArgsFieldError& error : e.errors()) {
      issues.push_back({error.field, error.detail});
    }
    return issues;
  }
  return {};
}

Registration::Registration(std::string name, framework::PluginFactory factory) {
  std::lock_guard lock(OutOfTreeMutex());
  OutOfTree()[std::move(name)] = std::move(factory);
}

}  // namespace berth::plugins::registry
