#include "pkg/api/requests.h"

#include <algorithm>
#include <string_view>

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

void ResourceSum::Apply(const ResourceList& amounts, int sign) {
  auto update = [sign](WideInt& exact, int64_t& clamped, int64_t amount) {
    exact += sign * static_cast<WideInt>(amount);
    clamped = ClampToInt64(exact);
  };
  update(milli_cpu_, clamped_.milli_cpu, amounts.milli_cpu);
  update(memory_, clamped_.memory, amounts.memory);
  update(ephemeral_storage_, clamped_.ephemeral_storage, amounts.ephemeral_storage);
  update(pods_, clamped_.pods, amounts.pods);
  auto& names = clamped_.scalar;
  for (const auto& [name, amount] : amounts.scalar) {
    if (amount == 0) continue;
    auto it =
        std::lower_bound(names.begin(), names.end(), name,
                         [](const auto& entry, std::string_view n) { return entry.first < n; });
    const auto index = it - names.begin();
    if (it == names.end() || it->first != name) {
      it = names.emplace(it, name, 0);
      scalar_.insert(scalar_.begin() + index, 0);
    }
    update(scalar_[index], it->second, amount);
    if (scalar_[index] == 0) {
      names.erase(it);
      scalar_.erase(scalar_.begin() + index);
    }
  }
}

bool ResourceSum::IsZero() const {
  return milli_cpu_ == 0 && memory_ == 0 && ephemeral_storage_ == 0 && pods_ == 0 &&
         scalar_.empty();
}

}  // namespace berth::api
