// One switch's gNMI subscriptions: a channel to its target, one streaming
// Subscribe RPC per group of its dialect (gnmi/dialect.h), and the
// SwitchState the responses are decoded into.
//
// - gRPC's callback API: no thread of ours per switch or per group. Each
//   response is decoded on a gRPC callback thread (under the session's
//   lock, so one switch's large response never holds another's), and the
//   reconnect timers run on a shared Scheduler.
// - A group that ends is started again after exponential backoff with
//   jitter (reset once a stream delivered data); a group the target refuses
//   with UNIMPLEMENTED is dropped and tried again after
//   `unimplemented_retry`, while the others stream. A group with SAMPLE
//   subscriptions that sends nothing for `idle_timeout` (a hung switch that
//   keeps its connection) is cancelled and started again. The switch is up
//   while its required group streams.
// - Sample phase (gnmi/sample_phase.h): a SAMPLE group whose samples arrive
//   just after the report grid's points, and so wait most of an interval
//   for the next report, is started again at the moment that puts them
//   before the grid points (a few tries at most).
// - Credentials: `username` and `password` metadata on every RPC, read once
//   from credentials_file (refused when its group or others may read it)
//   and never logged. Without tls_ca a session is refused unless
//   `insecure` (plaintext, tests only).
// - Messages up to `max_receive_bytes` (a SONiC COUNTERS table of 128 ports
//   is ~5.6 MB in one response; gRPC's default limit is 4 MB).
//
//   Scheduler scheduler;
//   ASSIGN_OR_RETURN(std::shared_ptr<SwitchSession> s,
//                    SwitchSession::Create(config, options, clock,
//                                          &scheduler));
//   s->Start();
//   s->Build(...);  // once per report interval
//   s->Stop();
//
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "gnmi/dialect.h"
#include "gnmi/sample_phase.h"
#include "gnmi/switch_state.h"
#include "proto/gnmi.grpc.pb.h"

namespace fabricdiag::gnmi {

// Runs callbacks after a delay on one thread (reconnect timers of every
// session). Thread-safe; the destructor drops what has not run.
class Scheduler {
 public:
  Scheduler();
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void After(absl::Duration delay, std::function<void()> fn);

 private:
  void Run();
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::multimap<absl::Time, std::function<void()>> queue_;
  std::thread thread_;
};

// A switch of the topology with a `gnmi` block (v1::GnmiTarget).
struct SwitchConfig {
  std::string name;     // the topology's switch name = the ingest node
  std::string address;  // host:port of its gNMI server
  Dialect dialect = Dialect::kOpenConfig;
  std::string tls_ca;  // CA file; empty needs `insecure`
  std::string tls_server_name;
  std::string credentials_file;  // empty: no credentials
  bool insecure = false;

  friend bool operator==(const SwitchConfig& a, const SwitchConfig& b) {
    return a.name == b.name && a.address == b.address &&
           a.dialect == b.dialect && a.tls_ca == b.tls_ca &&
           a.tls_server_name == b.tls_server_name &&
           a.credentials_file == b.credentials_file && a.insecure == b.insecure;
  }
};

struct SessionOptions {
  // The SAMPLE subscriptions' interval, which is also the report grid's.
  absl::Duration sample_interval = absl::Seconds(1);
  absl::Duration backoff_initial = absl::Milliseconds(250);
  absl::Duration backoff_max = absl::Seconds(30);
  absl::Duration unimplemented_retry = absl::Minutes(10);
  // Silence after which a SAMPLE group is restarted (counted as "idle").
  absl::Duration idle_timeout = absl::Seconds(30);
  int max_receive_bytes = 64 << 20;
};

// username (first line) and password (second line) of a credentials file.
struct Credentials {
  std::string username;
  std::string password;
};

// FailedPrecondition naming the file when its group or others may read or
// write it, or when it lacks the two lines; NotFound/PermissionDenied when
// unreadable.
absl::StatusOr<Credentials> ReadCredentialsFile(const std::string& path);

class SwitchSession : public std::enable_shared_from_this<SwitchSession> {
 public:
  struct Stats {
    bool up = false;  // the required group streams
    uint64_t updates = 0;
    int64_t last_update_nanos = 0;  // monotonic; 0 = never
    uint64_t reconnects = 0;        // groups started again after an end
    // Groups started again to move their samples before the grid points.
    uint64_t realigns = 0;
    // The longest of the sampled groups' median wait from a sample's
    // arrival to its report (SamplePhase::MedianWait); zero while unknown.
    absl::Duration sample_wait;
    uint64_t resets = 0;
    bool lldp_up = false;        // the LLDP group synced and streams
    size_t lldp_neighbors = 0;   // sent in the last report
    size_t lldp_incomplete = 0;  // held without a chassis or port id
    std::map<std::string, uint64_t> errors;  // by reason
    std::string last_error;                  // no secrets in it
  };

  // Reads the credentials and the CA and builds the channel (connects
  // lazily). InvalidArgument/FailedPrecondition naming the switch and the
  // file at fault. `clock` and `scheduler` must outlive the session.
  static absl::StatusOr<std::shared_ptr<SwitchSession>> Create(
      SwitchConfig config, SessionOptions options, const Clock& clock,
      Scheduler* scheduler);

  ~SwitchSession();
  SwitchSession(const SwitchSession&) = delete;
  SwitchSession& operator=(const SwitchSession&) = delete;

  // Starts every group. Call once.
  void Start();
  // Cancels every call and waits for them to end. Idempotent.
  void Stop();

  // See SwitchState::Build and TakeReload.
  void Build(int64_t now_nanos, absl::Time wall, absl::Duration stale_after,
             agent::Snapshot* snapshot, std::vector<agent::SampleRate>* rates);
  bool TakeReload();

  Stats stats() const;
  const SwitchConfig& config() const { return config_; }

 private:
  class GroupCall;
  SwitchSession(
      SwitchConfig config, SessionOptions options, const Clock& clock,
      Scheduler* scheduler, Credentials credentials,
      const std::shared_ptr<grpc::ChannelCredentials>& channel_credentials);

  void StartGroup(size_t group);
  void OnResponse(size_t group, const ::gnmi::SubscribeResponse& response);
  void OnGroupDone(size_t group, const grpc::Status& status);
  absl::Duration Backoff(int attempt);
  // Cancels SAMPLE groups silent for idle_timeout; runs again later.
  void CheckIdle();
  void ScheduleIdleCheck();

  const SwitchConfig config_;
  const SessionOptions options_;
  const Clock& clock_;
  Scheduler* const scheduler_;
  const Credentials credentials_;
  const std::vector<GroupSpec>& groups_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::gnmi::gNMI::Stub> stub_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool stopping_ = false;
  std::vector<GroupCall*> calls_;    // per group; null when not running
  std::vector<int> attempts_;        // per group: failures since data
  std::vector<bool> streaming_;      // per group: data since start
  std::vector<int64_t> last_rx_;     // per group: start or last response
  std::vector<bool> idle_;           // per group: cancelled for silence
  std::vector<bool> sampled_;        // per group: has SAMPLE subscriptions
  std::vector<bool> synced_;         // per group: sync_response since start
  std::vector<bool> realign_;        // per group: cancelled to move its phase
  std::vector<bool> resubscribing_;  // per group: ended by a realign, not yet
                                     // streaming again (still counted up)
  std::vector<SamplePhase> phases_;  // per group
  int live_calls_ = 0;
  SwitchState state_;
  uint64_t reconnects_ = 0;
  uint64_t realigns_ = 0;
  std::map<std::string, uint64_t> errors_;
  std::string last_error_;
};

}  // namespace fabricdiag::gnmi
