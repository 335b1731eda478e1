// Resource quantities as the apiserver serves them ("100m", "1.5Gi", "1e3"), in every object's
// requests, limits, capacity and allocatable.

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "pkg/api/errors.h"
#include "pkg/api/quantity.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// Whole units from thousandths, rounded away from zero as Value() rounds.
int64_t MilliToValue(int64_t milli) {
  const int64_t whole = milli / 1000;
  if (milli % 1000 == 0) return whole;
  return milli > 0 ? whole + 1 : whole - 1;
}

}  // namespace

void FuzzOneInput(std::string_view text) {
  api::Quantity quantity;
  std::string error;
  const bool ok = api::Quantity::TryParse(text, &quantity, &error);
  bool threw = false;
  try {
    api::Quantity::Parse(text);
  } catch (const api::DecodeError&) {
    threw = true;
  }
  Require(ok != threw, "Parse throws exactly when TryParse fails");
  if (!ok) {
    Require(!error.empty(), "a rejected quantity says why");
    return;
  }

  const int64_t value = quantity.Value();
  const int64_t milli = quantity.MilliValue();
  Require(quantity.IsZero() == (value == 0 && milli == 0),
          "only a zero quantity has a zero value (non-zero ones round away from zero)");
  Require(quantity.IsZero() || quantity.Negative() == (value < 0),
          "the value has the quantity's sign");
  if (milli != kMax && milli != kMin) {
    Require(MilliToValue(milli) == value, "Value() is MilliValue() rounded away from zero");
  }

  const std::string canonical = quantity.ToString();
  api::Quantity again;
  Require(api::Quantity::TryParse(canonical, &again, nullptr), "ToString() parses back");
  Require(again.Value() == value && again.MilliValue() == milli,
          "ToString() parses back to the same amount");
}

}  // namespace berth::fuzz
