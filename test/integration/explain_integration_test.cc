// Explain and simulate against the real apiserver: the berth-scheduler binary schedules the
// test's pods, and the berth-scheduler explain and simulate commands ask its secure port why, as a
// person would, with the token of a ServiceAccount the apiserver allows to read /debug/.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test/integration/scheduler_fixture.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using ::testing::HasSubstr;

class ExplainIntegration : public testing::SchedulerIntegration {
 protected:
  struct Run {
    int exit_code = -1;
    std::string output;
  };

  // A ServiceAccount bound to what the chart's debug-reader ClusterRole grants; its token is in
  // a file.
  struct Reader {
    Reader(const std::shared_ptr<client::Client>& admin, const std::string& ns)
        : account(admin, ns, "explainer"),
          grant(admin, "berth-it-debug-reader-" + testing::UniqueSuffix(),
                nlohmann::json::parse(R"([
                  {"nonResourceURLs": ["/debug/pods", "/debug/pods/*"], "verbs": ["get"]},
                  {"nonResourceURLs": ["/debug/simulate"], "verbs": ["post"]}])"),
                account.Subject()),
          token_file(testing::WriteTempFile("explainer.token", account.token())) {}
    testing::ServiceAccountToken account;
    testing::ClusterRoleGrant grant;
    std::string token_file;
  };

  // berth-scheduler with `args` (a command and its flags), against this test's scheduler's secure
  // port (its certificate self-signed), with the reader's token unless `args` has a token flag.
  Run Cli(std::vector<std::string> args) {
    if (!reader_) {
      reader_ = std::make_unique<Reader>(client_, ns_->name());
      EXPECT_TRUE(testing::WaitUntilAllowed(*client_, reader_->account.UserName(), "post",
                                            "/debug/simulate"));
    }
    const bool has_token = std::find_if(args.begin(), args.end(), [](const std::string& a) {
                             return a.rfind("--token", 0) == 0;
                           }) != args.end();
    if (!has_token) args.insert(args.end(), {"--token-file", reader_->token_file});
    args.insert(args.begin(), testing::BinaryPath("berth-scheduler"));
    args.insert(args.end(), {"--server", serving_url_, "--insecure-skip-tls-verify"});
    testing::ChildProcess cli;
    cli.Start(args, testing::WriteTempFile("cli.log", ""));
    Run run;
    run.exit_code = cli.WaitExit(60s);
    run.output = cli.Log();
    return run;
  }

  // The JSON explanation of the pod once its hints include `hint`, else the last one seen.
  nlohmann::json ExplainUntil(const std::string& pod, const std::string& hint) {
    nlohmann::json last;
    Eventually(
        [&] {
          Run run = Cli({"explain", ns_->name() + "/" + pod, "-o", "json"});
          if (run.exit_code != 0) return false;
          last = nlohmann::json::parse(run.output, nullptr, false);
          if (!last.is_object()) return false;
          for (const auto& h : last["hints"]) {
            if (h["text"] == hint) return true;
          }
          return false;
        },
        60s);
    return last;
  }

  std::unique_ptr<Reader> reader_;
};

TEST_F(ExplainIntegration, APodShortOf300mCpuEverywhereGetsTheClosestNodesAndTheReduction) {
  std::vector<std::string> close;
  for (const char* n : {"close-a", "close-b", "close-c"})
    close.push_back(nodes_->Add(n, "1", "4Gi"));
  for (const char* n : {"far-a", "far-b"}) nodes_->Add(n, "500m", "4Gi");
  StartScheduler();
  client_->Post(PodsPath(), Pod("short", "1300m"));

  const std::string hint = "reduce cpu request by 300m (fits 3 nodes)";
  nlohmann::json e = ExplainUntil("short", hint);
  ASSERT_TRUE(e.is_object()) << scheduler_->Log();
  EXPECT_EQ(e["attempt"]["outcome"], "Unschedulable");
  EXPECT_THAT(e["attempt"]["message"].get<std::string>(), HasSubstr("5 Insufficient cpu"));
  nlohmann::json reduction;
  for (const auto& h : e["hints"]) {
    if (h["text"] == hint) reduction = h;
  }
  ASSERT_TRUE(reduction.is_object()) << e.dump(2);
  std::vector<std::string> closest;
  for (const auto& d : reduction["details"]) {
    closest.push_back(d["name"]);
    EXPECT_EQ(d["detail"], "cpu 300m short");
  }
  EXPECT_EQ(closest, close) << "the three nodes closest to fitting, closest first";

  // The text form, as people read it.
  Run text = Cli({"explain", ns_->name() + "/short"});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("Pod " + ns_->name() + "/short (profile berth-scheduler)"));
  EXPECT_THAT(text.output, HasSubstr("  - " + hint + "\n"));
  EXPECT_THAT(text.output, HasSubstr("      " + close[0] + ": cpu 300m short\n"));
}

TEST_F(ExplainIntegration, ATaintedOnlyClusterYieldsTheTolerationHint) {
  auto taint = [](nlohmann::json& node) {
    node["spec"]["taints"] = {{{"key", "dedicated"}, {"value", "infra"}, {"effect", "NoSchedule"}}};
  };
  nodes_->Add("infra-a", "4", "8Gi", taint);
  nodes_->Add("infra-b", "4", "8Gi", taint);
  StartScheduler();
  client_->Post(PodsPath(), Pod("tolerate-me"));
  nlohmann::json e =
      ExplainUntil("tolerate-me", "add toleration dedicated=infra:NoSchedule (fits 2 nodes)");
  ASSERT_TRUE(e.is_object()) << scheduler_->Log();
  bool found = false;
  for (const auto& h : e["hints"]) {
    found = found || h["text"] == "add toleration dedicated=infra:NoSchedule (fits 2 nodes)";
  }
  EXPECT_TRUE(found) << e.dump(2);
  bool grouped = false;
  for (const auto& g : e["attempt"]["groups"]) {
    if (g["plugin"] == "TaintToleration") {
      grouped = true;
      // Tainted nodes other tests left in the shared cluster are rejected here too.
      EXPECT_GE(g["nodes"].get<int>(), 2);
    }
  }
  EXPECT_TRUE(grouped) << e.dump(2);
}

TEST_F(ExplainIntegration, ABoundPodsRecordShowsTheWinnersScoresBesideTheRunnerUps) {
  nodes_->Add("small", "2", "8Gi");
  nodes_->Add("medium", "4", "8Gi");
  nodes_->Add("large", "8", "8Gi");
  StartScheduler();
  client_->Post(PodsPath(), Pod("placed", "500m"));
  ASSERT_TRUE(WaitBound("placed"));
  const std::string node = NodeOf("placed");
  Run run = Cli({"explain", ns_->name() + "/placed", "-o", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto e = nlohmann::json::parse(run.output);
  EXPECT_EQ(e["attempt"]["outcome"], "Bound");
  EXPECT_EQ(e["attempt"]["node"], node);
  const auto& scores = e["attempt"]["scores"];
  ASSERT_GE(scores.size(), 2u) << e.dump(2);
  EXPECT_EQ(scores[0]["node"], node);
  EXPECT_TRUE(scores[0]["chosen"].get<bool>());
  EXPECT_GE(scores[0]["total"].get<int64_t>(), scores[1]["total"].get<int64_t>());
  for (const auto& s : scores) {
    int64_t sum = 0;
    for (const auto& p : s["plugins"]) {
      sum += p["weighted"].get<int64_t>();
      EXPECT_EQ(p["weighted"].get<int64_t>(),
                p["score"].get<int64_t>() * p["weight"].get<int64_t>());
    }
    EXPECT_EQ(sum, s["total"].get<int64_t>()) << s.dump();
  }
  Run text = Cli({"explain", ns_->name() + "/placed"});
  EXPECT_THAT(text.output, HasSubstr("bound to " + node));
  EXPECT_THAT(text.output, HasSubstr(node + " (chosen)"));
  EXPECT_THAT(text.output, HasSubstr(scores[1]["node"].get<std::string>()));
}

TEST_F(ExplainIntegration, SimulateIsADryRunAndTheEndpointsAnswerOnlyAllowedCallers) {
  const std::string node = nodes_->Add("only", "4", "8Gi");
  StartScheduler();
  Run unknown;
  ASSERT_TRUE(Eventually(
      [&] {
        unknown = Cli({"explain", ns_->name() + "/nobody"});
        return unknown.output.find("no attempt of pod " + ns_->name() + "/nobody") !=
               std::string::npos;
      },
      30s))
      << unknown.output;
  EXPECT_EQ(unknown.exit_code, 1);
  auto pod = Pod("what-if", "1");
  const std::string file = testing::WriteTempFile("pod.json", pod.dump());
  Run run = Cli({"simulate", "-f", file});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("would bind to " + node));
  EXPECT_EQ(client_->Get(PodsPath())["items"].size(), 0u) << "a dry run creates nothing";

  // Without a token, with one whose user may not read /debug/, and with the endpoints turned off.
  Run anonymous = Cli({"explain", ns_->name() + "/nobody", "--token", ""});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_THAT(anonymous.output, HasSubstr("did not accept the token (none given"));
  testing::ServiceAccountToken stranger(client_, ns_->name(), "stranger");
  Run forbidden = Cli({"explain", ns_->name() + "/nobody", "--token", stranger.token()});
  EXPECT_EQ(forbidden.exit_code, 1);
  EXPECT_THAT(forbidden.output,
              HasSubstr("cannot get path \"/debug/pods/" + ns_->name() + "/nobody\""));

  scheduler_->Stop(SIGTERM, 10s);
  StartScheduler("", {"--enable-debug-endpoints=false"});
  Run off;
  Eventually(
      [&] {
        off = Cli({"explain", ns_->name() + "/nobody"});
        return off.output.find("--enable-debug-endpoints") != std::string::npos;
      },
      30s);
  EXPECT_EQ(off.exit_code, 1);
  EXPECT_THAT(off.output, HasSubstr("serves no /debug/ endpoints: it runs with "
                                    "--enable-debug-endpoints=false"));
}

// Offline: no apiserver, a kubectl get nodes,pods -A -o json dump (with the kinds kubectl adds)
// and pods scheduled one after another, each seeing the ones placed before it.
TEST(ExplainOffline, SimulateSchedulesPodsOntoADumpInFileOrder) {
  nlohmann::json items = nlohmann::json::array();
  for (const char* name : {"n1", "n2"}) {
    nlohmann::json node = testing::NodeManifest(name, "1", "4Gi");
    items.push_back(node);
  }
  nlohmann::json running = testing::PodManifest("prod", "running", "default-scheduler", "600m");
  running["spec"]["nodeName"] = "n1";
  running["status"]["phase"] = "Running";
  items.push_back(running);
  nlohmann::json done = testing::PodManifest("prod", "done", "default-scheduler", "900m");
  done["spec"]["nodeName"] = "n2";
  done["status"]["phase"] = "Succeeded";
  items.push_back(done);
  const std::string dump = testing::WriteTempFile(
      "dump.json", nlohmann::json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump());
  std::string pods;
  for (const char* name : {"a", "b", "c"}) {
    pods += std::string("---\napiVersion: v1\nkind: Pod\nmetadata: {name: ") + name +
            "}\nspec:\n  containers:\n  - {name: app, resources: {requests: {cpu: 500m}}}\n";
  }
  const std::string file = testing::WriteTempFile("pods.yaml", pods);
  testing::ChildProcess cli;
  cli.Start({testing::BinaryPath("berth-scheduler"), "simulate", "--cluster", dump, "-f", file},
            testing::WriteTempFile("offline.log", ""));
  ASSERT_EQ(cli.WaitExit(60s), 0) << cli.Log();
  const std::string out = cli.Log();
  EXPECT_THAT(out, HasSubstr("2 nodes, 1 assigned pods; scheduling 3 pods in file order"));
  // n1 has 400m free (the finished pod on n2 holds nothing): a and b go to n2, and c, 100m
  // short on n1, stays.
  EXPECT_THAT(out, HasSubstr("default/a -> n2"));
  EXPECT_THAT(out, HasSubstr("default/b -> n2"));
  EXPECT_THAT(out, HasSubstr("default/c would stay Pending: 0/2 nodes are available: "
                             "2 Insufficient cpu."));
  EXPECT_THAT(out, HasSubstr("reduce cpu request by 100m (fits 1 node)"));
}

}  // namespace
}  // namespace berth
