// The bind-only reference binder for bench_e2e: binds every pending pod that names
// --scheduler-name to the nodes labelled --node-selector, round-robin, with no scheduling logic at
// all. It shares Berth's client and informers, so what it measures is the ceiling the apiserver
// (and this client) allows for binding, the number a scheduler's throughput is compared with.
//
//   bind_only --kubeconfig F --scheduler-name S --node-selector berth-bench=ID [--workers 32]
//             [--qps 5000 --burst 5000]
// Prints "ready" once its informers have synced; runs until SIGTERM.

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
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
  auto bind = [&](const api::PodPtr& pod) {
    if (pod->spec.scheduler_name != flags.scheduler_name || !pod->spec.node_name.empty()) return;
    binders.Post([&, pod] {
      const std::string& node = nodes[next++ % nodes.size()];
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
  binders.Shutdown();
  std::printf("bound %llu, failed %llu\n", static_cast<unsigned long long>(bound.load()),
              static_cast<unsigned long long>(failed.load()));
  return 0;
}
