// The documented way to add a plugin without touching pkg/: a source file with a static
// Registration, compiled into a binary by berth_scheduler_binary().

#include <gtest/gtest.h>

#include "pkg/framework/runtime/framework.h"
#include "pkg/framework/runtime/parallelizer.h"
#include "pkg/plugins/registry/registry.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"
#include "test/testing/process.h"

namespace berth::example {
namespace {

using namespace std::chrono_literals;

TEST(OutOfTreePlugin, RegistersAlongsideInTreePluginsAndFilters) {
  auto registry = plugins::registry::Registry();
  ASSERT_TRUE(registry.count("NodeLabelGate"));
  EXPECT_FALSE(plugins::registry::InTree().count("NodeLabelGate"));
  EXPECT_TRUE(registry.count("NodeResourcesFit"));

  config::Profile profile = config::DefaultConfiguration().profiles.front();
  profile.plugins.filter.enabled.push_back({"NodeLabelGate", 0});
  profile.plugin_config.push_back({"NodeLabelGate", {{"label", "example.com/gpu"}}});
  testing::FakeHandle handle;
  framework::runtime::WorkerPool pool(1);
  testing::NoNominations nominator;
  framework::runtime::FrameworkDeps deps;
  deps.snapshot = &handle.lister();
  deps.recorder = &handle.recorder();
  deps.parallelizer = &pool;
  deps.nominator = &nominator;
  deps.informer_factory = &handle.informers();
  framework::runtime::Framework fwk(registry, profile, deps);

  auto pod = testing::PodBuilder("p").Container("100m", "64Mi").Build();
  auto labelled =
      testing::NodeBuilder("a").Capacity("4", "8Gi").Label("example.com/gpu", "1").Info();
  auto plain = testing::NodeBuilder("b").Capacity("4", "8Gi").Info();
  framework::CycleState state;
  framework::PreFilterResult pre;
  ASSERT_TRUE(fwk.RunPreFilterPlugins(state, *pod, {labelled, plain}, &pre).IsSuccess());
  EXPECT_TRUE(fwk.RunFilterPlugins(state, *pod, *labelled).IsSuccess());
  auto rejected = fwk.RunFilterPlugins(state, *pod, *plain);
  EXPECT_EQ(rejected.plugin(), "NodeLabelGate");
  EXPECT_EQ(rejected.Message(), "node(s) lack label example.com/gpu");
}

TEST(OutOfTreePlugin, OnlyTheCustomBinaryAcceptsAConfigNamingIt) {
  const std::string config = testing::WriteTempFile("gate.yaml",
                                                    "apiVersion: kubescheduler.config.k8s.io/v1\n"
                                                    "kind: KubeSchedulerConfiguration\n"
                                                    "profiles:\n"
                                                    "- plugins:\n"
                                                    "    filter:\n"
                                                    "      enabled:\n"
                                                    "      - name: NodeLabelGate\n"
                                                    "  pluginConfig:\n"
                                                    "  - name: NodeLabelGate\n"
                                                    "    args:\n"
                                                    "      label: example.com/gpu\n");
  auto run = [&](const std::string& binary) {
    testing::ChildProcess proc;
    proc.Start({testing::BinaryPath(binary), "--config", config, "--kubeconfig",
                "/nonexistent/kubeconfig"},
               config + "." + binary + ".log");
    EXPECT_EQ(proc.WaitExit(10s), 1);
    return proc.Log();
  };
  std::string stock = run("berth-scheduler");
  EXPECT_NE(stock.find("unknown plugin \"NodeLabelGate\""), std::string::npos) << stock;
  // The custom binary gets past the config and fails only on the missing kubeconfig.
  std::string custom = run("berth-scheduler-example");
  EXPECT_EQ(custom.find("NodeLabelGate"), std::string::npos) << custom;
  EXPECT_NE(custom.find("/nonexistent/kubeconfig"), std::string::npos) << custom;
}

}  // namespace
}  // namespace berth::example
