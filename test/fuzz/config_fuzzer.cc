// The --config file (pkg/config/load.h): a KubeSchedulerConfiguration in YAML or JSON, with
// free-form plugin args. A configuration that loads, and that the framework would run, must load
// again, equal, from what ToJson makes of it (what /configz serves). Go durations, which the
// file's leaderElection fields are written in, are parsed from the raw input as well and must
// survive FormatGoDuration.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "pkg/config/config.h"
#include "pkg/config/load.h"
#include "pkg/util/time.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

constexpr size_t kMaxYamlKey = 1024;

// The in-tree plugins and one out-of-tree name, as berth-scheduler's registry would list them.
const std::set<std::string>& KnownPlugins() {
  static const std::set<std::string> known = [] {
    std::set<std::string> names = {"PrioritySort", "OutOfTree"};
    for (const config::PluginRef& ref : config::DefaultPlugins().multi_point.enabled) {
      names.insert(ref.name);
    }
    return names;
  }();
  return known;
}

// YAML reads a mapping key written without "?" only up to 1024 characters, JSON's "{" forms
// included (upstream's parser as well as yaml-cpp). Plugin args may hold a key that JSON's escapes
// take past that, which then cannot load again; nothing else in the file can.
bool KeysFitYaml(const nlohmann::json& value) {
  if (value.is_array()) {
    return std::all_of(value.begin(), value.end(), KeysFitYaml);
  }
  if (!value.is_object()) return true;
  for (const auto& [key, item] : value.items()) {
    if (nlohmann::json(key).dump().size() > kMaxYamlKey || !KeysFitYaml(item)) return false;
  }
  return true;
}

// Upstream's merge replaces a default with the last entry of the same name and appends the others,
// so a list naming a plugin twice comes back from /configz reordered. The framework refuses such a
// profile (or, when every extension point lists or disables the plugin, ignores its multiPoint
// entries), so no running scheduler serves one.
bool NamesAPluginTwice(const config::Configuration& loaded) {
  for (const config::Profile& profile : loaded.profiles) {
    for (const config::ExtensionPoint& point : config::ExtensionPoints()) {
      std::set<std::string_view> seen;
      for (const config::PluginRef& ref : (profile.plugins.*point.set).enabled) {
        if (!seen.insert(ref.name).second) return true;
      }
    }
  }
  return false;
}

void CheckLoad(const std::string& text) {
  config::Configuration loaded;
  try {
    loaded = config::LoadString(text, "fuzz", KnownPlugins());
  } catch (const config::ConfigError& e) {
    Require(!e.issues().empty(), "a configuration error lists its issues");
    return;
  }
  if (NamesAPluginTwice(loaded)) return;
  const nlohmann::json json = config::ToJson(loaded);
  if (!KeysFitYaml(json)) return;
  const std::string served = json.dump();
  std::optional<config::Configuration> again;
  try {
    again = config::LoadString(served, "configz", KnownPlugins());
  } catch (const config::ConfigError& e) {
    Require(false, "a loaded configuration loads again from its JSON", e.what());
  }
  Require(*again == loaded, "a configuration loads back equal from its JSON");
}

void CheckDuration(std::string_view text) {
  const std::optional<std::chrono::nanoseconds> parsed = util::ParseGoDuration(text);
  if (!parsed) return;
  Require(util::ParseGoDuration(util::FormatGoDuration(*parsed)) == *parsed,
          "FormatGoDuration writes a duration ParseGoDuration reads back");
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  CheckLoad(std::string(input));
  CheckDuration(input);
}

}  // namespace berth::fuzz
