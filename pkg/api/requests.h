#ifndef BERTH_PKG_API_REQUESTS_H_
#define BERTH_PKG_API_REQUESTS_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "pkg/api/types.h"

namespace berth::api {

// Fills pod.requests, pod.non_zero_* and pod.host_ports from pod.spec (called by DecodePod;
// exposed for tests and for pods built in memory by benchmarks).
void ComputePodRequests(Pod& pod);

// Wide enough that sums of int64 amounts cannot overflow: 2^64 terms would be needed.
using WideInt = __int128;

// Quantities decode into int64 amounts that saturate at its maximum (Quantity::MilliValue, and
// the sums of a pod's containers), so that value stands for "this much or more": an amount the
// int64 range cannot hold. A request of it is never known to fit, not even where the capacity
// saturated too (a node reporting 1E cpu and a pod asking 2^62 cpu both read as this value).
inline constexpr int64_t kSaturatedAmount = std::numeric_limits<int64_t>::max();

// `value` saturated into int64.
inline int64_t ClampToInt64(WideInt value) {
  if (value > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (value < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

// a * b / c truncated toward zero, as int64 arithmetic gives it whenever nothing overflows, and
// exact where int64 would overflow (scores multiply amounts near 2^63 by 100). c must not be 0
// and a * b must fit in 127 bits, as it does for any a and b of 64 bits and a bit more. Scoring
// calls this for every node: values that fit take the int64 path, not a 128-bit division.
inline WideInt MulDiv(WideInt a, WideInt b, WideInt c) {
  auto fits = [](WideInt v) {
    return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
  };
  int64_t product;
  if (fits(a) && fits(b) && fits(c) && c != -1 &&
      !__builtin_mul_overflow(static_cast<int64_t>(a), static_cast<int64_t>(b), &product)) {
    return product / static_cast<int64_t>(c);
  }
  return a * b / c;
}

// An exact running sum of ResourceLists, such as the requests of the pods on a node. Each pod's
// amounts are int64, but their sum may not be: a node's sum is kept exact, so adding a list and
// subtracting it again always restores the previous sum (saturating int64 arithmetic would lose
// whatever was cut off). clamped() is the sum saturated into int64, which compares with any int64
// allocatable as the exact sum would: a sum beyond the int64 range exceeds every allocatable.
//
// Invariant: clamped().scalar lists exactly the names whose sum is non-zero, in the same order
// as the exact scalar sums, so a sum back at zero equals a default ResourceList.
class ResourceSum {
 public:
  void Add(const ResourceList& amounts) { Apply(amounts, 1); }
  void Subtract(const ResourceList& amounts) { Apply(amounts, -1); }

  const ResourceList& clamped() const { return clamped_; }
  // True when every sum is exactly zero.
  bool IsZero() const;

 private:
  void Apply(const ResourceList& amounts, int sign);

  WideInt milli_cpu_ = 0;
  WideInt memory_ = 0;
  WideInt ephemeral_storage_ = 0;
  WideInt pods_ = 0;
  // scalar_[i] is the exact sum of clamped_.scalar[i].first.
  std::vector<WideInt> scalar_;
  ResourceList clamped_;
};

}  // namespace berth::api

#endif  // BERTH_PKG_API_REQUESTS_H_
