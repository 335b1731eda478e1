#ifndef BERTH_PKG_API_BINDING_H_
#define BERTH_PKG_API_BINDING_H_

#include <string>

#include "pkg/api/types.h"

namespace berth::api {

// The body of POST /api/v1/namespaces/{ns}/pods/{name}/binding.
std::string EncodeBinding(const Pod& pod, const std::string& node_name);

}  // namespace berth::api

#endif  // BERTH_PKG_API_BINDING_H_
