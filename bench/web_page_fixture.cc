// The collector's page and JSON (collector/web/web_routes.h) over a large
// simulated fabric (bench/web_fabric.h), served on loopback for a browser:
// tests/system/page_scale_test.py loads it in headless Chromium. Prints
// "port N" once it serves and stops on SIGTERM or SIGINT. Two windows of
// the fabric take turns as the latest view (as analysis passes publish new
// ones): the view changes after every --new_view_after requests that read
// it (the page reads it twice per poll: /api/v1/fabric and the job), so a
// test sees both changed and unchanged polls however slow the machine.
//
//   fabricdiag-web-fixture --nodes=8512 --listen=127.0.0.1:0
#include <signal.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/web_fabric.h"
#include "collector/web/web_routes.h"
#include "common/http_server.h"
#include "tests/testing/temp_dir.h"

ABSL_FLAG(int, nodes, 8512, "GPU nodes (8 NICs each), a multiple of 8");
ABSL_FLAG(int, nodes_per_leaf, 32, "Nodes cabled to each leaf");
ABSL_FLAG(int, jobs, 2, "Jobs covering every node");
ABSL_FLAG(std::string, listen, "127.0.0.1:0", "ADDR:PORT to serve on");
ABSL_FLAG(int, new_view_after, 6,
          "Requests that read the view before the other window replaces it");

namespace {

volatile std::sig_atomic_t stop = 0;

void OnSignal(int) { stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const int every = absl::GetFlag(FLAGS_new_view_after);
  if (nodes < 8 || nodes % 8 != 0 || absl::GetFlag(FLAGS_nodes_per_leaf) < 1 ||
      absl::GetFlag(FLAGS_jobs) < 1 || every < 1) {
    std::fprintf(stderr,
                 "fabricdiag-web-fixture: --nodes must be a multiple of 8, "
                 "--nodes_per_leaf, --jobs and --new_view_after at least "
                 "1\n");
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  const fabricdiag::testing::TempDir dir;
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<fabricdiag::bench::WebFabric>> fabric =
      fabricdiag::bench::WebFabric::Build(
          {nodes, absl::GetFlag(FLAGS_nodes_per_leaf),
           absl::GetFlag(FLAGS_jobs)},
          dir.path() + "/state");
  if (!fabric.ok()) {
    std::fprintf(stderr, "fabricdiag-web-fixture: %s\n",
                 fabric.status().ToString().c_str());
    return 1;
  }
  const std::shared_ptr<const fabricdiag::analysis::FabricView> first =
      (*fabric)->view();
  (*fabric)->NextView(2);
  const std::shared_ptr<const fabricdiag::analysis::FabricView> second =
      (*fabric)->view();
  std::atomic<int64_t> reads{0};
  fabricdiag::collector::WebSources sources = (*fabric)->Sources();
  sources.view = [&] { return (reads++ / every) % 2 == 0 ? first : second; };
  fabricdiag::HttpServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  absl::StatusOr<std::unique_ptr<fabricdiag::HttpServer>> server =
      fabricdiag::HttpServer::Start(options,
                                    fabricdiag::collector::WebRoutes(sources));
  if (!server.ok()) {
    std::fprintf(stderr, "fabricdiag-web-fixture: %s\n",
                 server.status().ToString().c_str());
    return 1;
  }
  std::printf("hot %s %s\nbuilt in %.1f s\nport %d\n",
              (*fabric)->hot_node().c_str(), (*fabric)->hot_device().c_str(),
              absl::ToDoubleSeconds(absl::Now() - start), (*server)->port());
  std::fflush(stdout);
  while (stop == 0) absl::SleepFor(absl::Milliseconds(50));
  return 0;
}
