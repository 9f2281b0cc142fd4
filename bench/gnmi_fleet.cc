// fabricdiag-gnmi-fleet: many identical OpenConfig gNMI targets in one
// process, for measuring what fabricdiag-gnmi-bridge costs per update at
// the scale of a large fabric (bench/gnmi_scale.py).
//
// Switch i listens on --base_port + i (--switches of them), has --ports
// front-panel ports (Ethernet0..) carrying traffic and per-priority PFC,
// and streams what the simulator's targets stream (sim/gnmi_leaves.h):
// every SAMPLE subscription's leaves once per --interval, in one
// Notification per subscription per tick with full paths, and sync_response
// after the first. A subscription that selects nothing (queues, Cumulus'
// augment) ends UNIMPLEMENTED, as real targets answer. All switches serve
// the same values: one tick's responses are built once and written to every
// stream, so the fleet's own cost stays small beside the bridge's.
//
// gRPC's callback API: no thread per stream. A stream that has not taken
// its previous tick's response when the next is due skips that tick
// (counted and printed at exit).
//
//   fabricdiag-gnmi-fleet --switches=1500 --ports=64 --base_port=30000
//       --topology_out=topology.json
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/gnmi.grpc.pb.h"
#include "sim/gnmi_leaves.h"
#include "sim/port_counters.h"

ABSL_FLAG(int, switches, 100, "Targets to serve, one port each");
ABSL_FLAG(int, ports, 64, "Front-panel ports per switch");
ABSL_FLAG(int, base_port, 30000, "Switch i listens on 127.0.0.1:base_port+i");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1), "Sample interval");
ABSL_FLAG(std::string, topology_out, "",
          "Write a topology (JSON) naming every switch with its gnmi block");

namespace fabricdiag::bench {
namespace {

using ::gnmi::SubscribeRequest;
using ::gnmi::SubscribeResponse;
using Response = std::shared_ptr<const SubscribeResponse>;

// The leaves of one switch now, and which of them each subscription path
// selects (the same for every switch).
class Fleet {
 public:
  explicit Fleet(int ports) {
    state_.name = "fleet";
    state_.boot_time_nanos =
        absl::ToUnixNanos(absl::Now()) - int64_t{86400} * 1000000000;
    for (int p = 0; p < ports; ++p) {
      state_.ports.push_back(absl::StrCat("Ethernet", p));
      state_.counters.emplace_back();
      sim::PortRates r;
      r.per_second[sim::kTxBytes] = 20e9 + 1e8 * p;
      r.per_second[sim::kRxBytes] = 19e9 + 1e8 * p;
      r.per_second[sim::kTxPackets] = r.per_second[sim::kTxBytes] / 4096;
      r.per_second[sim::kRxPackets] = r.per_second[sim::kRxBytes] / 4096;
      sim::SetPauseFraction(&r, sim::Side::kRx, 3, 0.01);
      rates_.push_back(r);
    }
  }

  // Advances the counters by `seconds` and rebuilds every cached
  // selection's response.
  void Tick(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t p = 0; p < rates_.size(); ++p) {
      sim::Accumulate(rates_[p], seconds, &state_.counters[p]);
    }
    state_.timestamp_nanos = absl::ToUnixNanos(absl::Now());
    leaves_ = sim::SwitchLeaves(gnmi::Dialect::kOpenConfig, state_);
    for (auto& [key, entry] : selections_) entry.response = Build(entry.leaves);
  }

  // The selection `request` makes (its key, for Current()), and its
  // response now; null when it selects nothing (UNIMPLEMENTED).
  Response Select(const SubscribeRequest& request, std::string* key_out) {
    std::lock_guard<std::mutex> lock(mu_);
    const ::gnmi::SubscriptionList& list = request.subscribe();
    std::string key;
    std::set<size_t> chosen;
    for (const ::gnmi::Subscription& sub : list.subscription()) {
      absl::StatusOr<sim::Selector> sel = sim::Selector::Create(
          gnmi::Dialect::kOpenConfig, list.prefix(), sub.path());
      if (!sel.ok()) return nullptr;
      absl::StrAppend(&key, sel->text(), ";");
      bool any = false;
      for (size_t i = 0; i < leaves_.size(); ++i) {
        if (sel->Matches(leaves_[i])) {
          chosen.insert(i);
          any = true;
        }
      }
      if (!any) return nullptr;
    }
    Selection& entry = selections_[key];
    if (entry.response == nullptr) {
      entry.leaves.assign(chosen.begin(), chosen.end());
      entry.response = Build(entry.leaves);
    }
    *key_out = key;
    return entry.response;
  }

  // The latest response of a selection Select() made.
  Response Current(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = selections_.find(key);
    return it == selections_.end() ? nullptr : it->second.response;
  }

 private:
  struct Selection {
    std::vector<size_t> leaves;
    Response response;
  };

  Response Build(const std::vector<size_t>& chosen) const {
    auto response = std::make_shared<SubscribeResponse>();
    ::gnmi::Notification* n = response->mutable_update();
    n->set_timestamp(state_.timestamp_nanos);
    for (size_t i : chosen) {
      const sim::Leaf& leaf = leaves_[i];
      ::gnmi::Update* u = n->add_update();
      *u->mutable_path() = leaf.prefix;
      for (const ::gnmi::PathElem& e : leaf.path.elem()) {
        *u->mutable_path()->add_elem() = e;
      }
      *u->mutable_val() = leaf.value;
    }
    return response;
  }

  std::mutex mu_;
  sim::SwitchState state_;
  std::vector<sim::PortRates> rates_;
  std::vector<sim::Leaf> leaves_;
  std::map<std::string, Selection> selections_;
};

std::atomic<uint64_t> g_skipped{0};
std::atomic<uint64_t> g_written{0};

class Streams;

// One Subscribe stream.
class SubscribeReactor
    : public grpc::ServerBidiReactor<SubscribeRequest, SubscribeResponse> {
 public:
  SubscribeReactor(Fleet* fleet, Streams* streams)
      : fleet_(fleet), streams_(streams) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override {}
  void OnDone() override;

  // The tick's response for this stream, unless the last one is still
  // being written.
  void Offer(uint64_t tick);

 private:
  void WriteNextLocked();

  Fleet* const fleet_;
  Streams* const streams_;
  SubscribeRequest request_;
  std::string selection_;  // Fleet::Select's key
  std::mutex mu_;
  bool subscribed_ = false;
  bool writing_ = false;
  bool finished_ = false;
  std::deque<Response> queue_;
};

// The streams that are subscribed, for the ticker.
class Streams {
 public:
  void Add(SubscribeReactor* r) {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.insert(r);
  }
  void Remove(SubscribeReactor* r) {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.erase(r);
  }
  void OfferAll(uint64_t tick) {
    std::lock_guard<std::mutex> lock(mu_);
    for (SubscribeReactor* r : streams_) r->Offer(tick);
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_.size();
  }

 private:
  std::mutex mu_;
  std::set<SubscribeReactor*> streams_;
};

void SubscribeReactor::OnReadDone(bool ok) {
  if (!ok) return;  // the client half-closed: keep streaming
  std::lock_guard<std::mutex> lock(mu_);
  if (subscribed_) {
    StartRead(&request_);
    return;
  }
  if (!request_.has_subscribe() ||
      request_.subscribe().mode() != ::gnmi::SubscriptionList::STREAM) {
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "STREAM only"));
    return;
  }
  Response first = fleet_->Select(request_, &selection_);
  if (first == nullptr) {
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "no such path on this target"));
    return;
  }
  subscribed_ = true;
  auto sync = std::make_shared<SubscribeResponse>();
  sync->set_sync_response(true);
  queue_.push_back(std::move(first));
  queue_.push_back(std::move(sync));
  WriteNextLocked();
  streams_->Add(this);
  StartRead(&request_);
}

void SubscribeReactor::Offer(uint64_t /*tick*/) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  if (writing_ || !queue_.empty()) {
    g_skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Response r = fleet_->Current(selection_);
  if (r == nullptr) return;
  queue_.push_back(std::move(r));
  WriteNextLocked();
}

void SubscribeReactor::WriteNextLocked() {
  if (writing_ || queue_.empty() || finished_) return;
  writing_ = true;
  StartWrite(queue_.front().get());
}

void SubscribeReactor::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  writing_ = false;
  if (!queue_.empty()) queue_.pop_front();
  if (!ok) {
    if (!finished_) {
      finished_ = true;
      Finish(grpc::Status::CANCELLED);
    }
    return;
  }
  g_written.fetch_add(1, std::memory_order_relaxed);
  WriteNextLocked();
}

void SubscribeReactor::OnDone() {
  streams_->Remove(this);
  delete this;
}

class FleetService final : public ::gnmi::gNMI::CallbackService {
 public:
  FleetService(Fleet* fleet, Streams* streams)
      : fleet_(fleet), streams_(streams) {}
  grpc::ServerBidiReactor<SubscribeRequest, SubscribeResponse>* Subscribe(
      grpc::CallbackServerContext* /*context*/) override {
    return new SubscribeReactor(fleet_, streams_);
  }

 private:
  Fleet* const fleet_;
  Streams* const streams_;
};

std::atomic<bool> g_stop{false};

int Main() {
  const int switches = absl::GetFlag(FLAGS_switches);
  const int base = absl::GetFlag(FLAGS_base_port);
  const absl::Duration interval = absl::GetFlag(FLAGS_interval);
  if (switches < 1 || base < 1 || base + switches > 65535 ||
      interval <= absl::ZeroDuration()) {
    std::fprintf(stderr, "bad --switches, --base_port or --interval\n");
    return 2;
  }
  Fleet fleet(absl::GetFlag(FLAGS_ports));
  fleet.Tick(0);
  Streams streams;
  FleetService service(&fleet, &streams);
  grpc::ServerBuilder builder;
  for (int i = 0; i < switches; ++i) {
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", base + i),
                             grpc::InsecureServerCredentials());
  }
  builder.SetMaxSendMessageSize(64 << 20);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "cannot listen on 127.0.0.1:%d..%d\n", base,
                 base + switches - 1);
    return 1;
  }
  const std::string out = absl::GetFlag(FLAGS_topology_out);
  if (!out.empty()) {
    std::ofstream f(out);
    f << "{\"switches\":[";
    for (int i = 0; i < switches; ++i) {
      f << (i ? "," : "") << "{\"name\":\"sw-" << i
        << "\",\"uplinks\":[\"Ethernet0\",\"Ethernet1\"],\"gnmi\":{"
        << "\"address\":\"127.0.0.1:" << base + i
        << "\",\"dialect\":\"openconfig\",\"insecure\":true}}";
    }
    f << "]}\n";
  }
  std::fprintf(stderr, "fleet: %d switches on 127.0.0.1:%d..%d ready\n",
               switches, base, base + switches - 1);
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::signal(SIGINT, [](int) { g_stop = true; });
  absl::Time next = absl::Now() + interval;
  uint64_t tick = 0;
  while (!g_stop) {
    if (absl::Now() < next) {
      absl::SleepFor(std::min(next - absl::Now(), absl::Milliseconds(50)));
      continue;
    }
    fleet.Tick(absl::ToDoubleSeconds(interval));
    streams.OfferAll(++tick);
    next += interval;
  }
  std::fprintf(stderr,
               "fleet: %zu streams, %" PRIu64 " responses written, %" PRIu64
               " skipped (stream still busy)\n",
               streams.size(), g_written.load(), g_skipped.load());
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  return 0;
}

}  // namespace
}  // namespace fabricdiag::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return fabricdiag::bench::Main();
}
