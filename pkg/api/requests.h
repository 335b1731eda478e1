#ifndef BERTH_PKG_API_REQUESTS_H_
#define BERTH_PKG_API_REQUESTS_H_

#include "pkg/api/types.h"

namespace berth::api {

// Fills pod.requests, pod.non_zero_* and pod.host_ports from pod.spec (called by DecodePod;
// exposed for tests and for pods built in memory by benchmarks).
void ComputePodRequests(Pod& pod);

}  // namespace berth::api

#endif  // BERTH_PKG_API_REQUESTS_H_
