#include "pkg/cel/decimal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace berth::cel {
namespace {

constexpr uint32_t kBase = 1000000000;
constexpr uint32_t kPow10[] = {1,      10,      100,      1000,      10000,
                               100000, 1000000, 10000000, 100000000, 1000000000};

void MulSmall(std::vector<uint32_t>* limbs, uint32_t m) {
  uint64_t carry = 0;
  for (uint32_t& limb : *limbs) {
    const uint64_t v = static_cast<uint64_t>(limb) * m + carry;
    limb = static_cast<uint32_t>(v % kBase);
    carry = v / kBase;
  }
  while (carry != 0) {
    limbs->push_back(static_cast<uint32_t>(carry % kBase));
    carry /= kBase;
  }
}

// Multiplies by 10^k.
void ShiftDecimal(std::vector<uint32_t>* limbs, int64_t k) {
  if (limbs->empty()) return;
  limbs->insert(limbs->begin(), static_cast<size_t>(k / 9), 0);
  if (k % 9 != 0) MulSmall(limbs, kPow10[k % 9]);
}

int CompareLimbs(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

std::vector<uint32_t> AddLimbs(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  uint32_t carry = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    uint32_t v = carry + (i < a.size() ? a[i] : 0) + (i < b.size() ? b[i] : 0);
    carry = v >= kBase ? 1 : 0;
    out.push_back(v - carry * kBase);
  }
  if (carry != 0) out.push_back(carry);
  return out;
}

// a - b for a >= b.
std::vector<uint32_t> SubLimbs(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t v = static_cast<int64_t>(a[i]) - borrow - (i < b.size() ? b[i] : 0);
    borrow = v < 0 ? 1 : 0;
    out.push_back(static_cast<uint32_t>(v + borrow * kBase));
  }
  while (!out.empty() && out.back() == 0) out.pop_back();
  return out;
}

int DigitsOf(uint32_t v) {
  int d = 0;
  while (v != 0) {
    ++d;
    v /= 10;
  }
  return d;
}

}  // namespace

Decimal Decimal::FromQuantity(const api::Quantity& q) {
  Decimal d;
  unsigned __int128 m = q.mantissa();
  while (m != 0) {
    d.limbs_.push_back(static_cast<uint32_t>(m % kBase));
    m /= kBase;
  }
  for (int e2 = q.exp2(); e2 > 0; e2 -= std::min(e2, 20)) {
    MulSmall(&d.limbs_, uint32_t{1} << std::min(e2, 20));
  }
  d.scale_ = q.exp10();
  d.negative_ = q.Negative();
  int digits = 0;
  for (unsigned __int128 m = q.mantissa(); m != 0; m /= 10) ++digits;
  d.Normalize();
  // apimachinery's ParseQuantity keeps the int64 form for at most 18 digits at a scale of at
  // least nano (decimal), or for a whole number whose binary suffix leaves enough precision;
  // everything else becomes a decimal rounded up to nano, binary ones capped at 2^63-1.
  if (q.exp2() == 0) {
    d.int64_form_ = digits <= 18 && q.exp10() >= -9;
    d.int64_scale_ = q.exp10();
  } else {
    const int precision = 15 - std::max(digits, 1) - q.exp2() * 3 / 10 - 1;
    d.int64_form_ = q.exp10() == 0 && precision >= 0 && d.AtScale(0).has_value();
    d.int64_scale_ = 0;
  }
  if (d.limbs_.empty()) {
    d.int64_form_ = true;
    d.int64_scale_ = q.exp10();
  }
  if (!d.int64_form_) {
    d.RoundUpToNano();
    if (q.exp2() != 0 && d.Compare(FromInt(std::numeric_limits<int64_t>::max())) > 0) {
      d = FromInt(std::numeric_limits<int64_t>::max());
      d.int64_form_ = false;
    }
  }
  return d;
}

void Decimal::RoundUpToNano() {
  if (limbs_.empty() || scale_ >= -9) return;
  if (Digits() + scale_ <= -9) {
    // Every digit is below a nano: the value rounds up (away from zero) to one nano.
    limbs_ = {1};
    scale_ = -9;
    return;
  }
  // Drop the digits below a nano, remembering whether any was not zero.
  int64_t drop = -9 - scale_;
  bool inexact = false;
  while (drop > 0) {
    const int step = static_cast<int>(std::min<int64_t>(drop, 9));
    const uint32_t div = kPow10[step];
    uint64_t rem = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      const uint64_t v = rem * kBase + limbs_[i];
      limbs_[i] = static_cast<uint32_t>(v / div);
      rem = v % div;
    }
    inexact = inexact || rem != 0;
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
    drop -= step;
  }
  scale_ = -9;
  if (inexact) limbs_ = AddLimbs(limbs_, {1});
  Normalize();
}

std::optional<int64_t> Decimal::AtScale(int64_t scale) const {
  if (limbs_.empty()) return 0;
  if (scale_ < scale || Digits() + (scale_ - scale) > 19) return std::nullopt;
  unsigned __int128 v = 0;
  for (size_t i = limbs_.size(); i-- > 0;) v = v * kBase + limbs_[i];
  for (int64_t i = scale; i < scale_; ++i) v *= 10;
  const auto max = static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max());
  if (v > max + (negative_ ? 1 : 0)) return std::nullopt;
  return negative_ ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : static_cast<int64_t>(v);
}

Decimal Decimal::FromInt(int64_t v) {
  Decimal d;
  d.negative_ = v < 0;
  uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  while (m != 0) {
    d.limbs_.push_back(static_cast<uint32_t>(m % kBase));
    m /= kBase;
  }
  d.Normalize();
  d.int64_form_ = true;
  return d;
}

void Decimal::Normalize() {
  while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  if (limbs_.empty()) {
    negative_ = false;
    scale_ = 0;
    return;
  }
  size_t zero_limbs = 0;
  while (limbs_[zero_limbs] == 0) ++zero_limbs;
  limbs_.erase(limbs_.begin(), limbs_.begin() + static_cast<std::ptrdiff_t>(zero_limbs));
  scale_ += 9 * static_cast<int64_t>(zero_limbs);
  int strip = 0;
  while (strip < 8 && limbs_[0] % kPow10[strip + 1] == 0) ++strip;
  if (strip > 0) {
    // Divides by 10^strip, carrying each limb's remainder into the limb below.
    const uint32_t div = kPow10[strip];
    uint64_t rem = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      const uint64_t v = rem * kBase + limbs_[i];
      limbs_[i] = static_cast<uint32_t>(v / div);
      rem = v % div;
    }
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
    scale_ += strip;
  }
}

int64_t Decimal::Digits() const {
  if (limbs_.empty()) return 0;
  return 9 * static_cast<int64_t>(limbs_.size() - 1) + DigitsOf(limbs_.back());
}

int Decimal::Sign() const { return limbs_.empty() ? 0 : (negative_ ? -1 : 1); }

int Decimal::CompareMagnitude(const Decimal& o) const {
  if (limbs_.empty() || o.limbs_.empty()) {
    return static_cast<int>(!limbs_.empty()) - static_cast<int>(!o.limbs_.empty());
  }
  const int64_t top = Digits() + scale_;
  const int64_t other_top = o.Digits() + o.scale_;
  if (top != other_top) return top < other_top ? -1 : 1;
  // Same leading position: the scales differ by less than either's digit count, so aligning
  // them is cheap.
  std::vector<uint32_t> a = limbs_;
  std::vector<uint32_t> b = o.limbs_;
  if (scale_ > o.scale_) ShiftDecimal(&a, scale_ - o.scale_);
  if (o.scale_ > scale_) ShiftDecimal(&b, o.scale_ - scale_);
  return CompareLimbs(a, b);
}

int Decimal::Compare(const Decimal& o) const {
  if (Sign() != o.Sign()) return Sign() < o.Sign() ? -1 : 1;
  const int mag = CompareMagnitude(o);
  return negative_ ? -mag : mag;
}

std::optional<Decimal> Decimal::Add(const Decimal& o) const {
  // apimachinery adds int64 forms as int64 forms at the smaller scale while the result fits;
  // a zero operand leaves the other as it is.
  if (int64_form_ && o.int64_form_) {
    if (o.limbs_.empty()) return *this;
    if (limbs_.empty()) return o;
  }
  std::optional<int64_t> a;
  std::optional<int64_t> b;
  const int64_t form_scale = std::min(int64_scale_, o.int64_scale_);
  if (int64_form_ && o.int64_form_) {
    a = AtScale(form_scale);
    b = o.AtScale(form_scale);
  }
  int64_t sum = 0;
  const bool stays_int64 = a && b && !__builtin_add_overflow(*a, *b, &sum);
  std::optional<Decimal> result = AddExact(o);
  if (result) {
    result->int64_form_ = stays_int64;
    result->int64_scale_ = form_scale;
    if (!stays_int64) result->RoundUpToNano();
  }
  return result;
}

std::optional<Decimal> Decimal::AddExact(const Decimal& o) const {
  if (o.limbs_.empty()) return *this;
  if (limbs_.empty()) return o;
  const int64_t scale = std::min(scale_, o.scale_);
  if (Digits() + (scale_ - scale) > kMaxDigits || o.Digits() + (o.scale_ - scale) > kMaxDigits) {
    return std::nullopt;
  }
  std::vector<uint32_t> a = limbs_;
  std::vector<uint32_t> b = o.limbs_;
  ShiftDecimal(&a, scale_ - scale);
  ShiftDecimal(&b, o.scale_ - scale);
  Decimal r;
  r.scale_ = scale;
  if (negative_ == o.negative_) {
    r.limbs_ = AddLimbs(a, b);
    r.negative_ = negative_;
  } else if (CompareLimbs(a, b) >= 0) {
    r.limbs_ = SubLimbs(a, b);
    r.negative_ = negative_;
  } else {
    r.limbs_ = SubLimbs(b, a);
    r.negative_ = o.negative_;
  }
  r.Normalize();
  return r;
}

std::optional<Decimal> Decimal::Sub(const Decimal& o) const {
  Decimal neg = o;
  if (!neg.limbs_.empty()) neg.negative_ = !neg.negative_;
  return Add(neg);
}

std::optional<int64_t> Decimal::AsInt64() const {
  if (!int64_form_ || int64_scale_ < 0) return std::nullopt;
  if (limbs_.empty()) return 0;
  if (scale_ < 0 || Digits() + scale_ > 19) return std::nullopt;
  unsigned __int128 v = 0;
  for (size_t i = limbs_.size(); i-- > 0;) v = v * kBase + limbs_[i];
  for (int64_t i = 0; i < scale_; ++i) v *= 10;
  const auto max = static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max());
  if (!negative_) {
    if (v > max) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (v > max + 1) return std::nullopt;
  return static_cast<int64_t>(0 - static_cast<uint64_t>(v));
}

double Decimal::AsApproximateDouble() const {
  if (limbs_.empty()) return 0;
  double base = 0;
  const size_t keep = std::min<size_t>(limbs_.size(), 3);
  for (size_t i = limbs_.size(); i-- > limbs_.size() - keep;) base = base * kBase + limbs_[i];
  const int64_t exponent = scale_ + 9 * static_cast<int64_t>(limbs_.size() - keep);
  double v = base;
  if (exponent > 400) {
    v = std::numeric_limits<double>::infinity();
  } else if (exponent < -400) {
    v = base * std::pow(10.0, -300.0) * std::pow(10.0, static_cast<double>(exponent + 300));
  } else if (exponent != 0) {
    v = base * std::pow(10.0, static_cast<double>(exponent));
  }
  return negative_ ? -v : v;
}

std::string Decimal::ToString() const {
  if (limbs_.empty()) return "0";
  std::string digits = std::to_string(limbs_.back());
  for (size_t i = limbs_.size() - 1; i-- > 0;) {
    std::string part = std::to_string(limbs_[i]);
    digits += std::string(9 - part.size(), '0') + part;
  }
  std::string out = negative_ ? "-" : "";
  if (scale_ >= 0 && scale_ <= 6) return out + digits + std::string(scale_, '0');
  if (scale_ < 0 && -scale_ < static_cast<int64_t>(digits.size())) {
    const size_t point = digits.size() - static_cast<size_t>(-scale_);
    return out + digits.substr(0, point) + "." + digits.substr(point);
  }
  return out + digits + "e" + std::to_string(scale_);
}

}  // namespace berth::cel
