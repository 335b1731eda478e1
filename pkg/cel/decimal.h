#ifndef BERTH_PKG_CEL_DECIMAL_H_
#define BERTH_PKG_CEL_DECIMAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pkg/api/quantity.h"

namespace berth::cel {

// An exact signed decimal, magnitude * 10^scale, for the quantity library's comparisons and
// arithmetic (apimachinery computes these exactly too, at nano precision). The magnitude is
// kept in base-10^9 limbs, least significant first, with no high zero limbs and no trailing
// decimal zeros (they move into scale), so equal values have equal representations.
//
// Beside the value it tracks whether apimachinery would hold the quantity as its int64 form
// (value, scale) and at which scale, because asInteger()/isInteger() answer from that form:
// "1000m" is held as (1000, -3) and is not an integer to them, "1Pi" is held as a big decimal
// and is not one either.
class Decimal {
 public:
  // Results of Add/Sub whose magnitude would need more digits than this are refused instead
  // of allocated (a quantity like "1e100000" plus "1m" would need 100,003 digits).
  static constexpr int64_t kMaxDigits = 4096;

  static Decimal FromQuantity(const api::Quantity& q);
  static Decimal FromInt(int64_t v);

  int Sign() const;
  int Compare(const Decimal& other) const;
  // nullopt when the exact result would exceed kMaxDigits.
  std::optional<Decimal> Add(const Decimal& other) const;
  std::optional<Decimal> Sub(const Decimal& other) const;
  // The value when it is a whole number within int64.
  std::optional<int64_t> AsInt64() const;
  double AsApproximateDouble() const;
  std::string ToString() const;

 private:
  int CompareMagnitude(const Decimal& other) const;
  std::optional<Decimal> AddExact(const Decimal& other) const;
  int64_t Digits() const;
  void Normalize();
  void RoundUpToNano();
  // The value / 10^scale as an integer, when it is one and fits int64.
  std::optional<int64_t> AtScale(int64_t scale) const;

  bool negative_ = false;
  std::vector<uint32_t> limbs_;  // empty for zero
  int64_t scale_ = 0;
  bool int64_form_ = false;  // apimachinery's int64Amount{value, int64_scale_}
  int64_t int64_scale_ = 0;
};

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_DECIMAL_H_
