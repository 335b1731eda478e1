#include "pkg/plugins/helper/normalize_score.h"

#include <algorithm>

#include "pkg/api/requests.h"

namespace berth::plugins::helper {

void DefaultNormalizeScore(int64_t max_priority, bool reverse, framework::NodeScoreList& scores) {
  int64_t max_score = 0;
  for (const framework::NodeScore& s : scores) max_score = std::max(max_score, s.score);

  if (max_score == 0) {
    if (reverse) {
      for (framework::NodeScore& s : scores) s.score = max_priority;
    }
    return;
  }

  for (framework::NodeScore& s : scores) {
    // A raw score near 2^63 times max_priority would overflow int64.
    const auto scaled = static_cast<int64_t>(api::MulDiv(max_priority, s.score, max_score));
    s.score = reverse ? max_priority - scaled : scaled;
  }
}

}  // namespace berth::plugins::helper
