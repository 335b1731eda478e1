#include "pkg/api/requests.h"

namespace berth::api {
namespace {

// Upstream resourcehelper.PodRequests without in-place resize: containers summed, init
// containers folded in as a running maximum that accounts for sidecars (restartable init
// containers keep running, so they add to everything started after them).
template <typename RequestsOf>
ResourceList AggregateRequests(const PodSpec& spec, RequestsOf requests_of) {
  ResourceList total;
  for (const Container& c : spec.containers) {
    total.Add(requests_of(c));
  }
  ResourceList restartable_sum;
  ResourceList init_max;
  for (const Container& c : spec.init_containers) {
    if (c.restartable) {
      total.Add(requests_of(c));
      restartable_sum.Add(requests_of(c));
      init_max.MaxWith(restartable_sum);
    } else {
      ResourceList running = requests_of(c);
      running.Add(restartable_sum);
      init_max.MaxWith(running);
    }
  }
  total.MaxWith(init_max);
  return total;
}

// Pod-level requests (spec.resources) replace the aggregate for the resources they state.
void ApplyPodLevel(const PodSpec& spec, int64_t* milli_cpu, int64_t* memory) {
  if (!spec.resources.has_value()) {
    return;
  }
  if (spec.resources->has_cpu_request) {
    *milli_cpu = spec.resources->requests.milli_cpu;
  }
  if (spec.resources->has_memory_request) {
    *memory = spec.resources->requests.memory;
  }
}

}  // namespace

void ComputePodRequests(Pod& pod) {
  const PodSpec& spec = pod.spec;
  pod.requests = AggregateRequests(
      spec, [](const Container& c) -> const ResourceList& { return c.resources.requests; });
  ApplyPodLevel(spec, &pod.requests.milli_cpu, &pod.requests.memory);
  pod.requests.Add(spec.overhead);

  ResourceList non_zero = AggregateRequests(spec, [](const Container& c) {
    ResourceList r;
    r.milli_cpu =
        c.resources.has_cpu_request ? c.resources.requests.milli_cpu : kDefaultMilliCPURequest;
    r.memory = c.resources.has_memory_request ? c.resources.requests.memory : kDefaultMemoryRequest;
    return r;
  });
  ApplyPodLevel(spec, &non_zero.milli_cpu, &non_zero.memory);
  non_zero.Add(spec.overhead);
  pod.non_zero_milli_cpu = non_zero.milli_cpu;
  pod.non_zero_memory = non_zero.memory;

  pod.host_ports.clear();
  for (const auto* containers : {&spec.containers, &spec.init_containers}) {
    for (const Container& c : *containers) {
      for (const ContainerPort& port : c.ports) {
        if (port.host_port != 0) {
          pod.host_ports.push_back(port);
        }
      }
    }
  }
}

}  // namespace berth::api
