// fabricdiag-loadgen: many virtual agents streaming into a collector.
//
//   fabricdiag-loadgen --target=127.0.0.1:9811 --nodes=8000 --nics=8
//       --counters=150 --interval=1s --duration=30s
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "collector/loadgen/loadgen.h"

ABSL_FLAG(std::string, target, "127.0.0.1:9811", "collector HOST:PORT");
ABSL_FLAG(int, nodes, 100, "virtual agents (one stream each)");
ABSL_FLAG(int, nics, 8, "NICs per node");
ABSL_FLAG(int, counters, 150, "counters per NIC");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1), "report interval");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(30), "how long to send");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(5),
          "latency counts only reports sent after this");
ABSL_FLAG(int, channels, 4, "gRPC channels (connections) to spread over");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("ingest-protocol load generator");
  absl::ParseCommandLine(argc, argv);
  fabricdiag::collector::loadgen::LoadgenOptions o;
  o.target = absl::GetFlag(FLAGS_target);
  o.nodes = absl::GetFlag(FLAGS_nodes);
  o.nics = absl::GetFlag(FLAGS_nics);
  o.counters = absl::GetFlag(FLAGS_counters);
  o.interval = absl::GetFlag(FLAGS_interval);
  o.duration = absl::GetFlag(FLAGS_duration);
  o.channels = absl::GetFlag(FLAGS_channels);
  o.warmup = absl::GetFlag(FLAGS_warmup);
  auto r = fabricdiag::collector::loadgen::RunLoadgen(o, &std::cout);
  if (!r.ok()) {
    std::cerr << "fabricdiag-loadgen: " << r.status() << "\n";
    return 2;
  }
  std::cout << absl::StrFormat(
      "done: %.1fs, values/s sent %.3gM acked %.3gM; reports sent %d acked %d "
      "dropped %d; streams rejected %d failed %d; %s\n",
      r->seconds, r->values_sent / r->seconds / 1e6,
      r->values_acked / r->seconds / 1e6, r->reports_sent, r->reports_acked,
      r->reports_dropped, r->streams_rejected, r->streams_failed,
      fabricdiag::collector::loadgen::LatencySummary(*r));
  if (r->reports_acked == 0) {
    std::cerr << "fabricdiag-loadgen: the collector at " << o.target
              << " acknowledged no report (" << r->streams_failed
              << " streams failed, " << r->streams_rejected << " rejected)\n";
    return 1;
  }
  return 0;
}
