#include "pkg/plugins/helper/normalize_score.h"

#include <algorithm>

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
    int64_t scaled = max_priority * s.score / max_score;
    s.score = reverse ? max_priority - scaled : scaled;
  }
}

}  // namespace berth::plugins::helper
