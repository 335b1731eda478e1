// Replays test/testdata/cel/selectors.yaml: each row is one expression against one device and
// the outcome kube-scheduler v1.37 gives it (a match, no match, or an error containing a text).

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "pkg/api/quantity.h"
#include "pkg/cel/cel.h"

namespace berth::cel {
namespace {

AttributeValue ReadAttribute(const YAML::Node& n) {
  if (n["bool"]) return n["bool"].as<bool>();
  if (n["int"]) return n["int"].as<int64_t>();
  if (n["string"]) return n["string"].as<std::string>();
  if (n["version"]) return Version{n["version"].as<std::string>()};
  if (n["bools"]) return n["bools"].as<std::vector<bool>>();
  if (n["ints"]) return n["ints"].as<std::vector<int64_t>>();
  if (n["strings"]) return n["strings"].as<std::vector<std::string>>();
  std::vector<Version> versions;
  for (const auto& v : n["versions"]) versions.push_back(Version{v.as<std::string>()});
  return versions;
}

DeviceView ReadDevice(const YAML::Node& n) {
  DeviceView d;
  if (!n) return d;
  if (n["driver"]) d.driver = n["driver"].as<std::string>();
  if (n["allowMultipleAllocations"]) {
    d.allow_multiple_allocations = n["allowMultipleAllocations"].as<bool>();
  }
  for (const auto& kv : n["attributes"]) {
    d.attributes[kv.first.as<std::string>()] = ReadAttribute(kv.second);
  }
  for (const auto& kv : n["capacity"]) {
    d.capacity[kv.first.as<std::string>()] = api::Quantity::Parse(kv.second.as<std::string>());
  }
  return d;
}

TEST(Selectors, Table) {
  const YAML::Node doc = YAML::LoadFile("test/testdata/cel/selectors.yaml");
  int rows = 0;
  for (const auto& row : doc["rows"]) {
    ++rows;
    const auto expr = row["expression"].as<std::string>();
    SCOPED_TRACE("expression: " + expr);
    const DeviceView device = ReadDevice(row["device"]);
    const CompileResult compiled = Compile(expr);
    std::string error = compiled.error;
    bool matches = false;
    if (compiled.program) {
      const EvalResult r = Matches(*compiled.program, device);
      error = r.error;
      matches = r.matches;
    }
    if (row["error"]) {
      const auto want = row["error"].as<std::string>();
      EXPECT_NE(error.find(want), std::string::npos)
          << "want error containing: " << want << "\ngot error: " << error
          << "\nmatches: " << matches;
    } else {
      EXPECT_EQ(error, "");
      EXPECT_EQ(matches, row["match"].as<bool>());
    }
  }
  EXPECT_GE(rows, 150);
}

}  // namespace
}  // namespace berth::cel
