#ifndef BERTH_PKG_API_QUANTITY_H_
#define BERTH_PKG_API_QUANTITY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace berth::api {

// A Kubernetes resource quantity ("100m", "1.5Gi", "1e3", "2Ki", "500u", "1E"), held as a decimal
// mantissa with base-10 and base-2 exponents, exact up to 38 significant digits (longer inputs
// fold the rest into a round-up of the last kept digit; see quantity.cc).
//
// Value() and MilliValue() round away from zero like apimachinery's Quantity and saturate at
// the int64 range instead of wrapping. Immutable, so safe to share across threads.
class Quantity {
 public:
  Quantity() = default;

  // Parses every form apimachinery accepts: an optional sign, digits with at most one '.', and
  // one suffix from {"", n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei} or a decimal
  // exponent e<int>/E<int>. Throws api::DecodeError naming `field` on anything else.
  static Quantity Parse(std::string_view text, std::string_view field = "quantity");

  // Parses like Parse() but reports failure through the return value instead of throwing.
  static bool TryParse(std::string_view text, Quantity* out, std::string* error);

  static Quantity FromMilli(int64_t milli);
  static Quantity FromValue(int64_t value);

  // Whole units (bytes for memory, cores for cpu), rounded away from zero.
  int64_t Value() const;
  // Thousandths of a unit (millicores for cpu), rounded away from zero.
  int64_t MilliValue() const;

  bool IsZero() const { return mantissa_ == 0; }
  // The exact representation, |value| = mantissa() * 10^exp10() * 2^exp2(), for code that must
  // compute with quantities exactly (pkg/cel's quantity library).
  unsigned __int128 mantissa() const { return mantissa_; }
  int exp10() const { return exp10_; }
  int exp2() const { return exp2_; }
  bool Negative() const { return negative_; }
  // -1, 0 or 1.
  int Sign() const { return mantissa_ == 0 ? 0 : (negative_ ? -1 : 1); }

  // Exact comparison of the values (-1, 0, 1), whatever their suffixes: "1Ki" equals "1024",
  // "0.5" equals "500m". Never rounds.
  static int Compare(const Quantity& a, const Quantity& b);

  // The exact sum or difference. std::nullopt when the exact result does not fit the
  // representation (more than 38 significant digits, e.g. "1e60" + "1"), so arithmetic never
  // rounds or wraps silently; callers decide how to report it.
  static std::optional<Quantity> Add(const Quantity& a, const Quantity& b);
  static std::optional<Quantity> Sub(const Quantity& a, const Quantity& b);

  // Value equality (Compare == 0), not equality of the written form.
  friend bool operator==(const Quantity& a, const Quantity& b) { return Compare(a, b) == 0; }

  // A canonical string for logs and errors (not necessarily the apiserver's canonical form).
  std::string ToString() const;

 private:
  int64_t ScaledValue(int decimal_shift) const;

  // |value| = mantissa_ * 10^exp10_ * 2^exp2_, with mantissa_ < 2^127 and exp2_ one of
  // {0, 10, 20, ..., 60}; a zero quantity has all fields zero.
  unsigned __int128 mantissa_ = 0;
  int exp10_ = 0;
  int exp2_ = 0;
  bool negative_ = false;
};

}  // namespace berth::api

#endif  // BERTH_PKG_API_QUANTITY_H_
