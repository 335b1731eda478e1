#ifndef BERTH_PKG_PLUGINS_HELPER_NORMALIZE_SCORE_H_
#define BERTH_PKG_PLUGINS_HELPER_NORMALIZE_SCORE_H_

// Score normalization shared by Score plugins (upstream helper.DefaultNormalizeScore).

#include <cstdint>

#include "pkg/framework/interface.h"

namespace berth::plugins::helper {

// Rescales raw scores from [0, max(scores)] to [0, max_priority] with integer division
// (score * max_priority / max). With `reverse`, each result is then subtracted from
// max_priority, so the lowest raw score ranks highest. When every raw score is 0 the scores are
// left at 0, or all set to max_priority when reversing.
//
// Raw scores must be non-negative.
void DefaultNormalizeScore(int64_t max_priority, bool reverse, framework::NodeScoreList& scores);

}  // namespace berth::plugins::helper

#endif  // BERTH_PKG_PLUGINS_HELPER_NORMALIZE_SCORE_H_
