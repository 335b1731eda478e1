// DRA device selector expressions (DeviceClass and ResourceClaim `selectors[].cel`): text any
// user with write access to those objects controls, compiled and evaluated by the scheduler.

#include <cstdint>
#include <string>
#include <string_view>

#include "pkg/api/quantity.h"
#include "pkg/cel/cel.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

cel::DeviceView Device() {
  cel::DeviceView d;
  d.driver = "dra.example.com";
  d.allow_multiple_allocations = true;
  d.attributes["model"] = std::string("a100");
  d.attributes["cores"] = int64_t{108};
  d.attributes["healthy"] = true;
  d.attributes["version"] = cel::Version{"1.2.3-rc.1"};
  d.attributes["ids"] = std::vector<int64_t>{1, 2, 3};
  d.attributes["names"] = std::vector<std::string>{"fish", "bird"};
  d.attributes["other.example.com/zone"] = std::string("a");
  d.capacity["memory"] = api::Quantity::Parse("80Gi");
  d.capacity["cpu"] = api::Quantity::Parse("500m");
  return d;
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  static const cel::DeviceView device = Device();
  const cel::CompileResult compiled = cel::Compile(input);
  Require(compiled.program.has_value() != !compiled.error.empty(),
          "a compilation gives a program or an error, never both or neither", compiled.error);
  if (!compiled.program) return;
  // A small limit keeps each input fast; the evaluator must stop within it whatever the input.
  constexpr uint64_t kLimit = 100000;
  const cel::EvalResult result = cel::Matches(*compiled.program, device, kLimit);
  Require(!result.matches || result.error.empty(), "a match carries no error", result.error);
  Require(
      result.error.find("actual cost limit exceeded") != std::string::npos || result.cost <= kLimit,
      "the cost stays within the limit unless the limit is reported");
}

}  // namespace berth::fuzz
