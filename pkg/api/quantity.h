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
  // How apimachinery writes a quantity back out (its Format): the form it was parsed in, kept
  // through copies and arithmetic, so that a value the scheduler writes into an object reads as
  // kube-scheduler would write it ("30Gi", not "32212254720").
  enum class Format : uint8_t { kDecimalSI, kBinarySI, kDecimalExponent };

  Quantity() = default;

  // Parses every form apimachinery accepts: an optional sign, digits with at most one '.', and
  // one suffix from {"", n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei} or a decimal
  // exponent e<int>/E<int>. Throws api::DecodeError naming `field` on anything else.
  static Quantity Parse(std::string_view text, std::string_view field = "quantity");

  // Parses like Parse() but reports failure through the return value instead of throwing.
  static bool TryParse(std::string_view text, Quantity* out, std::string* error);

  static Quantity FromMilli(int64_t milli, Format format = Format::kDecimalSI);
  static Quantity FromValue(int64_t value, Format format = Format::kDecimalSI);

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
  // rounds or wraps silently; callers decide how to report it. The result has `a`'s format, or
  // `b`'s when `a` is zero, as apimachinery's Add.
  static std::optional<Quantity> Add(const Quantity& a, const Quantity& b);
  static std::optional<Quantity> Sub(const Quantity& a, const Quantity& b);

  // Value equality (Compare == 0), not equality of the written form.
  friend bool operator==(const Quantity& a, const Quantity& b) { return Compare(a, b) == 0; }

  // A canonical string for logs and errors (not necessarily the apiserver's canonical form).
  std::string ToString() const;
  // apimachinery's canonical text of the value in its format (Quantity.String()): what the
  // scheduler writes into API objects.
  std::string Canonical() const;
  Format format() const { return format_; }

 private:
  int64_t ScaledValue(int decimal_shift) const;
  // Add without choosing the result's format.
  static std::optional<Quantity> AddValues(const Quantity& a, const Quantity& b);

  // |value| = mantissa_ * 10^exp10_ * 2^exp2_, with mantissa_ < 2^127 and exp2_ one of
  // {0, 10, 20, ..., 60}; a zero quantity has all fields zero.
  unsigned __int128 mantissa_ = 0;
  int exp10_ = 0;
  int exp2_ = 0;
  bool negative_ = false;
  Format format_ = Format::kDecimalSI;
};

}  // namespace berth::api

#endif  // BERTH_PKG_API_QUANTITY_H_
