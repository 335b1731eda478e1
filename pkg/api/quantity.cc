#include "pkg/api/quantity.h"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "pkg/api/errors.h"

namespace berth::api {
namespace {

using u128 = unsigned __int128;

// The mantissa keeps at most 38 significant digits: accepting a digit requires the mantissa to
// be below 10^37, so it always stays below 10^38 (< 2^127) and the sticky round-up below can add
// one without overflow.
constexpr u128 Pow10(int k) {
  u128 p = 1;
  for (int i = 0; i < k; ++i) {
    p *= 10;
  }
  return p;
}
constexpr u128 kMantissaDigitLimit = Pow10(37);
constexpr int kMaxPow10InU128 = 38;

// The magnitude of INT64_MIN; any larger magnitude saturates.
constexpr u128 kMagnitudeLimit = static_cast<u128>(1) << 63;

// Exponents beyond this already saturate (or round to one unit) for every representable
// mantissa, so clamping keeps the arithmetic in int range without changing any result.
constexpr int64_t kExponentClamp = 1'000'000;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string U128ToString(u128 v) {
  if (v == 0) {
    return "0";
  }
  char buf[40];
  int pos = sizeof(buf);
  while (v != 0) {
    buf[--pos] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  }
  return std::string(buf + pos, sizeof(buf) - pos);
}

// Decimal SI suffixes by exponent / 3 + 3, i.e. 10^-9 .. 10^18.
constexpr std::array<std::string_view, 10> kDecimalSuffixes = {"n", "u", "m", "",  "k",
                                                               "M", "G", "T", "P", "E"};
// Binary SI suffixes by exponent / 10, i.e. 2^0 .. 2^60.
constexpr std::array<std::string_view, 7> kBinarySuffixes = {"",   "Ki", "Mi", "Gi",
                                                             "Ti", "Pi", "Ei"};

// Parses the suffix that follows the number into a base-10 or base-2 exponent. Returns false
// with `why` set when the suffix is not one apimachinery accepts.
bool ParseSuffix(std::string_view suffix, int64_t* exp10, int* exp2, std::string* why) {
  *exp10 = 0;
  *exp2 = 0;
  if (suffix.empty()) {
    return true;
  }
  if (suffix.size() == 1) {
    for (size_t i = 0; i < kDecimalSuffixes.size(); ++i) {
      if (!kDecimalSuffixes[i].empty() && kDecimalSuffixes[i] == suffix) {
        *exp10 = (static_cast<int64_t>(i) - 3) * 3;
        return true;
      }
    }
  }
  if (suffix.size() == 2 && suffix[1] == 'i') {
    for (size_t i = 1; i < kBinarySuffixes.size(); ++i) {
      if (kBinarySuffixes[i] == suffix) {
        *exp2 = static_cast<int>(i) * 10;
        return true;
      }
    }
  }
  if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view rest = suffix.substr(1);
    bool negative = false;
    if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
      negative = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (rest.empty()) {
      *why = "missing exponent digits in suffix \"" + std::string(suffix) + "\"";
      return false;
    }
    int64_t exponent = 0;
    for (char c : rest) {
      if (!IsDigit(c)) {
        *why = "malformed exponent in suffix \"" + std::string(suffix) + "\"";
        return false;
      }
      if (exponent < kExponentClamp) {
        exponent = exponent * 10 + (c - '0');
      }
    }
    *exp10 = negative ? -exponent : exponent;
    return true;
  }
  *why = "unknown suffix \"" + std::string(suffix) + "\"";
  return false;
}

// A fixed 256-bit unsigned integer, only for the rare case where mantissa * 2^exp2 overflows
// 128 bits before a decimal division (e.g. a long fraction with an "Ei" suffix).
class Wide {
 public:
  explicit Wide(u128 v) {
    for (auto& limb : limbs_) {
      limb = static_cast<uint32_t>(v);
      v >>= 32;
    }
  }

  void ShiftLeft(int bits) {
    while (bits > 0) {
      int step = bits > 31 ? 31 : bits;
      uint64_t carry = 0;
      for (auto& limb : limbs_) {
        uint64_t cur = (static_cast<uint64_t>(limb) << step) | carry;
        limb = static_cast<uint32_t>(cur);
        carry = cur >> 32;
      }
      bits -= step;
    }
  }

  // Divides in place; returns the remainder.
  uint32_t DivMod(uint32_t divisor) {
    uint64_t rem = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      uint64_t cur = (rem << 32) | limbs_[i];
      limbs_[i] = static_cast<uint32_t>(cur / divisor);
      rem = cur % divisor;
    }
    return static_cast<uint32_t>(rem);
  }

  // Returns false when the value does not fit in 128 bits.
  bool ToU128(u128* out) const {
    for (size_t i = 4; i < limbs_.size(); ++i) {
      if (limbs_[i] != 0) {
        return false;
      }
    }
    u128 v = 0;
    for (size_t i = 4; i-- > 0;) {
      v = (v << 32) | limbs_[i];
    }
    *out = v;
    return true;
  }

 private:
  std::array<uint32_t, 8> limbs_{};
};

int64_t ClampToInt(int64_t v) {
  if (v > kExponentClamp) {
    return kExponentClamp;
  }
  if (v < -kExponentClamp) {
    return -kExponentClamp;
  }
  return v;
}

// A fixed 512-bit unsigned integer for exact comparison and addition. Operands are brought to a
// common exponent first; the callers bound the exponent gap (kMaxExponentGap) so that a
// mantissa (< 2^127) times 10^gap times 2^60 stays below 2^453 and nothing here overflows.
class BigNat {
 public:
  static constexpr size_t kLimbs = 16;

  explicit BigNat(u128 v) {
    for (auto& limb : limbs_) {
      limb = static_cast<uint32_t>(v);
      v >>= 32;
    }
  }

  void MulSmall(uint32_t factor) {
    uint64_t carry = 0;
    for (auto& limb : limbs_) {
      uint64_t cur = static_cast<uint64_t>(limb) * factor + carry;
      limb = static_cast<uint32_t>(cur);
      carry = cur >> 32;
    }
  }

  void MulPow10(int k) {
    for (int i = 0; i < k; ++i) {
      MulSmall(10);
    }
  }

  void ShiftLeft(int bits) {
    for (int i = 0; i < bits; ++i) {
      MulSmall(2);
    }
  }

  uint32_t DivMod(uint32_t divisor) {
    uint64_t rem = 0;
    for (size_t i = kLimbs; i-- > 0;) {
      uint64_t cur = (rem << 32) | limbs_[i];
      limbs_[i] = static_cast<uint32_t>(cur / divisor);
      rem = cur % divisor;
    }
    return static_cast<uint32_t>(rem);
  }

  uint32_t Mod(uint32_t divisor) const {
    BigNat copy = *this;
    return copy.DivMod(divisor);
  }

  bool IsZero() const {
    for (uint32_t limb : limbs_) {
      if (limb != 0) {
        return false;
      }
    }
    return true;
  }

  static int Compare(const BigNat& a, const BigNat& b) {
    for (size_t i = kLimbs; i-- > 0;) {
      if (a.limbs_[i] != b.limbs_[i]) {
        return a.limbs_[i] < b.limbs_[i] ? -1 : 1;
      }
    }
    return 0;
  }

  void AddInPlace(const BigNat& other) {
    uint64_t carry = 0;
    for (size_t i = 0; i < kLimbs; ++i) {
      uint64_t cur = static_cast<uint64_t>(limbs_[i]) + other.limbs_[i] + carry;
      limbs_[i] = static_cast<uint32_t>(cur);
      carry = cur >> 32;
    }
  }

  // Requires *this >= other.
  void SubInPlace(const BigNat& other) {
    int64_t borrow = 0;
    for (size_t i = 0; i < kLimbs; ++i) {
      int64_t cur = static_cast<int64_t>(limbs_[i]) - other.limbs_[i] - borrow;
      borrow = cur < 0 ? 1 : 0;
      limbs_[i] = static_cast<uint32_t>(cur + (borrow << 32));
    }
  }

  // True with *out set when the value is below 2^127, the mantissa bound of Quantity.
  bool ToMantissa(u128* out) const {
    for (size_t i = 4; i < kLimbs; ++i) {
      if (limbs_[i] != 0) {
        return false;
      }
    }
    if ((limbs_[3] >> 31) != 0) {
      return false;
    }
    u128 v = 0;
    for (size_t i = 4; i-- > 0;) {
      v = (v << 32) | limbs_[i];
    }
    *out = v;
    return true;
  }

 private:
  std::array<uint32_t, kLimbs> limbs_{};
};

// A non-zero magnitude m * 10^e10 * 2^e2 with m < 2^127 and e2 <= 60 lies in
// [10^e10, 10^(e10 + 58)), so when the decimal exponents differ by this much or more the larger
// exponent decides a comparison, and an exact sum would need more digits than a mantissa holds.
constexpr int kMaxExponentGap = 58;

}  // namespace

int Quantity::Compare(const Quantity& a, const Quantity& b) {
  const int sa = a.Sign();
  const int sb = b.Sign();
  if (sa != sb) {
    return sa < sb ? -1 : 1;
  }
  if (sa == 0) {
    return 0;
  }
  int magnitude = 0;
  const int64_t gap = static_cast<int64_t>(a.exp10_) - b.exp10_;
  if (gap == 0 && a.exp2_ == b.exp2_) {
    magnitude = a.mantissa_ == b.mantissa_ ? 0 : (a.mantissa_ < b.mantissa_ ? -1 : 1);
  } else if (gap >= kMaxExponentGap) {
    magnitude = 1;
  } else if (gap <= -kMaxExponentGap) {
    magnitude = -1;
  } else {
    const int common = a.exp10_ < b.exp10_ ? a.exp10_ : b.exp10_;
    BigNat ma(a.mantissa_);
    ma.MulPow10(a.exp10_ - common);
    ma.ShiftLeft(a.exp2_);
    BigNat mb(b.mantissa_);
    mb.MulPow10(b.exp10_ - common);
    mb.ShiftLeft(b.exp2_);
    magnitude = BigNat::Compare(ma, mb);
  }
  return sa < 0 ? -magnitude : magnitude;
}

std::optional<Quantity> Quantity::Add(const Quantity& a, const Quantity& b) {
  if (a.IsZero()) {
    return b;
  }
  if (b.IsZero()) {
    return a;
  }
  std::optional<Quantity> sum = AddValues(a, b);
  if (sum) sum->format_ = a.format_;
  return sum;
}

std::optional<Quantity> Quantity::AddValues(const Quantity& a, const Quantity& b) {
  const int64_t gap = static_cast<int64_t>(a.exp10_) - b.exp10_;
  if (gap >= kMaxExponentGap || gap <= -kMaxExponentGap) {
    return std::nullopt;
  }
  const int common10 = a.exp10_ < b.exp10_ ? a.exp10_ : b.exp10_;
  int common2 = a.exp2_ < b.exp2_ ? a.exp2_ : b.exp2_;
  BigNat ma(a.mantissa_);
  ma.MulPow10(a.exp10_ - common10);
  ma.ShiftLeft(a.exp2_ - common2);
  BigNat mb(b.mantissa_);
  mb.MulPow10(b.exp10_ - common10);
  mb.ShiftLeft(b.exp2_ - common2);

  bool negative = a.negative_;
  if (a.negative_ == b.negative_) {
    ma.AddInPlace(mb);
  } else if (BigNat::Compare(ma, mb) >= 0) {
    ma.SubInPlace(mb);
  } else {
    mb.SubInPlace(ma);
    ma = mb;
    negative = b.negative_;
  }
  Quantity out;
  if (ma.IsZero()) {
    return out;
  }
  int exp10 = common10;
  u128 mantissa = 0;
  // Strip trailing decimal zeros and whole binary suffix steps until the mantissa fits.
  while (ma.Mod(10) == 0) {
    ma.DivMod(10);
    ++exp10;
  }
  while (!ma.ToMantissa(&mantissa)) {
    if (common2 >= 60 || ma.Mod(1024) != 0) {
      return std::nullopt;
    }
    ma.DivMod(1024);
    common2 += 10;
  }
  out.mantissa_ = mantissa;
  out.exp10_ = exp10;
  out.exp2_ = common2;
  out.negative_ = negative;
  return out;
}

std::optional<Quantity> Quantity::Sub(const Quantity& a, const Quantity& b) {
  Quantity negated = b;
  if (!negated.IsZero()) {
    negated.negative_ = !negated.negative_;
  }
  return Add(a, negated);
}

bool Quantity::TryParse(std::string_view text, Quantity* out, std::string* error) {
  std::string why;
  auto fail = [&](std::string reason) {
    if (error != nullptr) {
      *error = std::move(reason);
    }
    return false;
  };
  if (text.empty()) {
    return fail("empty string");
  }

  size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    pos = 1;
  }

  u128 mantissa = 0;
  int64_t exp10 = 0;
  bool any_digit = false;
  bool seen_dot = false;
  // Set when a non-zero digit did not fit in the mantissa; see the rounding note below.
  bool dropped_nonzero = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '.') {
      if (seen_dot) {
        return fail("more than one decimal point");
      }
      seen_dot = true;
      continue;
    }
    if (!IsDigit(c)) {
      break;
    }
    any_digit = true;
    if (mantissa < kMantissaDigitLimit) {
      mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
      if (seen_dot) {
        --exp10;
      }
    } else {
      // Dropped integer digits still scale the value; dropped fraction digits do not.
      if (!seen_dot) {
        ++exp10;
      }
      if (c != '0') {
        dropped_nonzero = true;
      }
    }
  }
  if (!any_digit) {
    return fail("expected a number");
  }

  int64_t suffix_exp10 = 0;
  int exp2 = 0;
  if (!ParseSuffix(text.substr(pos), &suffix_exp10, &exp2, &why)) {
    return fail(why);
  }

  // Digits beyond the 38th significant one are folded into a round-up of the last kept digit.
  // Value() and MilliValue() round away from zero, so this keeps them exact for every decimal
  // form; with a binary suffix they may exceed the exact result by one unit only when the
  // mantissa has more than 38 significant digits.
  if (dropped_nonzero) {
    ++mantissa;
  }

  Quantity q;
  if (mantissa != 0) {
    q.mantissa_ = mantissa;
    q.exp10_ = static_cast<int>(ClampToInt(ClampToInt(exp10) + suffix_exp10));
    q.exp2_ = exp2;
    q.negative_ = negative;
  }
  const std::string_view suffix = text.substr(pos);
  if (exp2 != 0) {
    q.format_ = Format::kBinarySI;
  } else if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    // "E" alone is exa; "E3" or "e-3" is an exponent.
    q.format_ = Format::kDecimalExponent;
  }
  *out = q;
  return true;
}

Quantity Quantity::Parse(std::string_view text, std::string_view field) {
  Quantity q;
  std::string why;
  if (!TryParse(text, &q, &why)) {
    throw DecodeError(std::string(field), "invalid quantity \"" + std::string(text) + "\": " + why);
  }
  return q;
}

Quantity Quantity::FromMilli(int64_t milli, Format format) {
  Quantity q = FromValue(milli, format);
  if (q.mantissa_ != 0) {
    q.exp10_ = -3;
  }
  return q;
}

Quantity Quantity::FromValue(int64_t value, Format format) {
  Quantity q;
  q.format_ = format;
  q.negative_ = value < 0;
  // Negating in unsigned arithmetic keeps INT64_MIN exact.
  uint64_t magnitude =
      q.negative_ ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  q.mantissa_ = magnitude;
  return q;
}

int64_t Quantity::Value() const { return ScaledValue(0); }

int64_t Quantity::MilliValue() const { return ScaledValue(3); }

int64_t Quantity::ScaledValue(int decimal_shift) const {
  if (mantissa_ == 0) {
    return 0;
  }
  const int64_t e10 = static_cast<int64_t>(exp10_) + decimal_shift;
  bool saturated = false;
  u128 magnitude = 0;

  if (e10 >= 0) {
    // Every step multiplies a value at most 2^63 by at most 10, so nothing overflows before
    // the check; the loops stop as soon as the result is out of range.
    magnitude = mantissa_;
    saturated = magnitude > kMagnitudeLimit;
    for (int i = 0; i < exp2_ && !saturated; ++i) {
      magnitude <<= 1;
      saturated = magnitude > kMagnitudeLimit;
    }
    for (int64_t i = 0; i < e10 && !saturated; ++i) {
      magnitude *= 10;
      saturated = magnitude > kMagnitudeLimit;
    }
  } else {
    const int64_t k = -e10;
    const bool fits = exp2_ == 0 || (mantissa_ >> (127 - exp2_)) == 0;
    // Past this many decimal places the numerator is below 10^k, i.e. a non-zero fraction of
    // one unit: mantissa << exp2 < 2^127 < 10^39 when it fits, else < 2^127 * 2^60 < 10^57.
    const int64_t fraction_only = fits ? kMaxPow10InU128 : 57;
    if (k > fraction_only) {
      magnitude = 1;
    } else if (fits) {
      const u128 numerator = mantissa_ << exp2_;
      const u128 divisor = Pow10(static_cast<int>(k));
      magnitude = numerator / divisor + (numerator % divisor != 0 ? 1 : 0);
      saturated = magnitude > kMagnitudeLimit;
    } else {
      Wide wide(mantissa_);
      wide.ShiftLeft(exp2_);
      bool remainder = false;
      for (int64_t i = 0; i < k; ++i) {
        remainder |= wide.DivMod(10) != 0;
      }
      saturated = !wide.ToU128(&magnitude) || magnitude > kMagnitudeLimit;
      if (!saturated && remainder) {
        ++magnitude;
      }
      saturated = saturated || magnitude > kMagnitudeLimit;
    }
  }

  if (negative_) {
    if (saturated || magnitude == kMagnitudeLimit) {
      return std::numeric_limits<int64_t>::min();
    }
    return -static_cast<int64_t>(magnitude);
  }
  if (saturated || magnitude >= kMagnitudeLimit) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(magnitude);
}

std::string Quantity::ToString() const {
  if (mantissa_ == 0) {
    return "0";
  }
  u128 m = mantissa_;
  int64_t e10 = exp10_;
  while (m % 10 == 0) {
    m /= 10;
    ++e10;
  }
  std::string out = negative_ ? "-" : "";
  std::string digits = U128ToString(m);

  if (exp2_ != 0) {
    // exp2_ is one of the binary suffixes' exponents (10, 20, ..., 60): only Parse sets it.
    if (e10 >= 0) {
      out += digits;
      out.append(static_cast<size_t>(e10), '0');
    } else {
      const size_t frac = static_cast<size_t>(-e10);
      if (digits.size() <= frac) {
        digits.insert(0, frac - digits.size() + 1, '0');
      }
      digits.insert(digits.size() - frac, 1, '.');
      out += digits;
    }
    out += kBinarySuffixes[static_cast<size_t>(exp2_ / 10)];
    return out;
  }

  if (e10 > 18 || e10 < -9) {
    out += digits;
    out += 'e';
    out += std::to_string(e10);
    return out;
  }
  // Largest SI exponent (a multiple of 3) not above e10; floor division for negatives.
  const int64_t si = (e10 >= 0 ? e10 / 3 : (e10 - 2) / 3) * 3;
  out += digits;
  out.append(static_cast<size_t>(e10 - si), '0');
  out += kDecimalSuffixes[static_cast<size_t>(si / 3 + 3)];
  return out;
}

std::string Quantity::Canonical() const {
  if (mantissa_ == 0) {
    return "0";
  }
  // The value as an exact decimal: digits * 10^exponent. The binary part is multiplied out;
  // past 38 digits the form for logs stands in (no quantity a driver publishes comes near).
  u128 digits = mantissa_;
  int64_t exponent = exp10_;
  for (int i = 0; i < exp2_; ++i) {
    if (digits > (~static_cast<u128>(0)) / 2) return ToString();
    digits *= 2;
  }
  while (digits % 10 == 0) {
    digits /= 10;
    ++exponent;
  }
  const std::string sign = negative_ ? "-" : "";
  Format format = format_;
  if (format == Format::kBinarySI) {
    // An integer of at least 1024 is written with the largest binary suffix that divides it;
    // anything else in decimal, so that nothing is rounded.
    u128 whole = digits;
    bool integer = exponent >= 0;
    for (int64_t i = 0; integer && i < exponent; ++i) {
      if (whole > (~static_cast<u128>(0)) / 10) return ToString();
      whole *= 10;
    }
    if (!integer || whole < 1024) {
      format = Format::kDecimalSI;
    } else {
      size_t suffix = 0;
      while (suffix + 1 < kBinarySuffixes.size() && whole % 1024 == 0) {
        whole /= 1024;
        ++suffix;
      }
      return sign + U128ToString(whole) + std::string(kBinarySuffixes[suffix]);
    }
  }
  // The exponent goes down to a multiple of 3, the digits up to match.
  const int64_t down = ((exponent % 3) + 3) % 3;
  for (int64_t i = 0; i < down; ++i) {
    if (digits > (~static_cast<u128>(0)) / 10) return ToString();
    digits *= 10;
  }
  exponent -= down;
  std::string out = sign + U128ToString(digits);
  if (exponent == 0) return out;
  if (format == Format::kDecimalSI && exponent >= -9 && exponent <= 18) {
    return out + std::string(kDecimalSuffixes[static_cast<size_t>(exponent / 3 + 3)]);
  }
  return out + "e" + std::to_string(exponent);
}

}  // namespace berth::api
