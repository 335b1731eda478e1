// The bind-only reference binder for bench_e2e: binds every pending pod that names
// --scheduler-name to the nodes labelled --node-selector, round-robin, with no scheduling logic at
// all. It shares Berth's client and informers, so what it measures is the ceiling the apiserver
// (and this client) allows for binding, the number a scheduler's throughput is compared with.
// Like berth-scheduler, it sends bindings with no thread waiting for them (PostRawAsync), at
// most --workers at once, and hands one to a worker thread only when that cannot settle it.
//
//   bind_only --kubeconfig F --scheduler-name S --node-selector berth-bench=ID [--workers 32]
//             [--qps 5000 --burst 5000]
// Prints "ready" once its informers have synced; runs until SIGTERM.

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/api/binding.h"
#include "pkg/client/client.h"
#include "pkg/informer/factory.h"
#include "pkg/util/task_queue.h"

namespace {

using namespace berth;

struct Flags {
  std::string kubeconfig, scheduler_name, node_selector;
  int workers = 32;
  double qps = 5000;
  int burst = 5000;
};

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--kubeconfig")
      f.kubeconfig = v;
    else if (k == "--scheduler-name")
      f.scheduler_name = v;
    else if (k == "--node-selector")
      f.node_selector = v;
    else if (k == "--workers")
      f.workers = std::stoi(v);
    else if (k == "--qps")
      f.qps = std::stod(v);
    else if (k == "--burst")
      f.burst = std::stoi(v);
    else {
      std::fprintf(stderr, "bind_only: unknown flag %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (f.kubeconfig.empty() || f.scheduler_name.empty() || f.node_selector.empty()) {
    std::fprintf(stderr,
                 "bind_only: --kubeconfig, --scheduler-name and --node-selector are "
                 "required\n");
    std::exit(2);
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = Parse(argc, argv);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  client::Config config = client::LoadKubeconfig(flags.kubeconfig);
  config.qps = flags.qps;
  config.burst = flags.burst;
  auto client = client::NewClient(config);

  std::vector<std::string> nodes;
  auto list = client->Get("/api/v1/nodes?labelSelector=" + flags.node_selector);
  for (const auto& n : list["items"]) nodes.push_back(n["metadata"]["name"]);
  if (nodes.empty()) {
    std::fprintf(stderr, "bind_only: no node matches %s\n", flags.node_selector.c_str());
    return 1;
  }

  util::TaskQueue binders(flags.workers, 1 << 20);
  std::atomic<uint64_t> next{0}, bound{0}, failed{0};
  // The blocking way, on a worker: PostRaw with its retries.
  auto bind_blocking = [&](const api::PodPtr& pod, const std::string& node) {
    binders.Post([&, pod, node] {
      try {
        client->PostRaw(
            client::PodsResource().Path(pod->meta.namespace_, pod->meta.name, "binding"),
            api::EncodeBinding(*pod, node));
        bound++;
      } catch (const std::exception& e) {
        failed++;
        std::fprintf(stderr, "bind %s: %s\n", pod->Key().c_str(), e.what());
      }
    });
  };
  std::mutex mu;
  std::deque<api::PodPtr> waiting;  // Guarded by mu, as is in_flight.
  int in_flight = 0;
  std::function<void(const api::PodPtr&)> send;
  // A binding was answered: its place goes to the next pod waiting.
  auto pass_on = [&] {
    api::PodPtr pod;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (waiting.empty()) {
        in_flight--;
        return;
      }
      pod = std::move(waiting.front());
      waiting.pop_front();
    }
    send(pod);
  };
  send = [&](const api::PodPtr& pod) {
    std::string node = nodes[next++ % nodes.size()];
    const bool sent = client->PostRawAsync(
        client::PodsResource().Path(pod->meta.namespace_, pod->meta.name, "binding"),
        api::EncodeBinding(*pod, node), [&, pod, node](client::AsyncReply reply) {
          if (!reply.error) {
            bound++;
          } else if (reply.retry_may_help) {
            bind_blocking(pod, node);
          } else {
            failed++;
            std::fprintf(stderr, "bind %s: %s\n", pod->Key().c_str(), reply.error->what());
          }
          pass_on();
        });
    if (!sent) {
      bind_blocking(pod, node);
      pass_on();
    }
  };
  auto bind = [&](const api::PodPtr& pod) {
    if (pod->spec.scheduler_name != flags.scheduler_name || !pod->spec.node_name.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (in_flight >= flags.workers) {
        waiting.push_back(pod);
        return;
      }
      in_flight++;
    }
    send(pod);
  };
  informer::SharedInformerFactory informers(client);
  informer::EventHandler<api::Pod> handler;
  handler.on_add = bind;
  informers.Pods().AddEventHandler(std::move(handler));
  informers.Start();
  while (!informers.WaitForCacheSync(std::chrono::seconds(5))) {
    std::fprintf(stderr, "bind_only: waiting for the pod informer to sync\n");
  }
  std::printf("ready\n");
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  informers.Stop();
  // Every binding sent without a thread is answered by the request timeout at the latest.
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (in_flight == 0) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  binders.Shutdown();
  std::printf("bound %llu, failed %llu\n", static_cast<unsigned long long>(bound.load()),
              static_cast<unsigned long long>(failed.load()));
  return 0;
}
