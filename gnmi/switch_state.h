// What the bridge knows of one switch from its gNMI stream: the latest value
// and rate of every (port, series), each port's oper status and speed, and
// the switch's boot time; turned into an agent Snapshot once per report.
//
// Time: a rate is the increase over the longer of two intervals: the
// bridge's monotonic receive clock, and the notification timestamps when they
// advanced by at most kMaxTimestampLead more than it. The receive clock alone
// overstates a rate when a sample arrives late and the next one on time: the
// initial sync of a reconnect replays a sample taken up to an interval ago,
// and the next sample, a few milliseconds later, would carry a whole
// interval's increase over those milliseconds (a false PFC storm after a
// switch's gNMI outage). The timestamps alone cannot be trusted either: some
// targets stamp a sample with the leaf's last-change time, so consecutive
// samples can carry the same timestamp (a rate over zero seconds), or one
// from long ago, and a target's clock may step. Taking the longer interval,
// a rate is never above the receive clock's.
//
// Refresh cadence: a switch may refresh a counter less often than it is
// sampled (SONiC polls port statistics every second, queues and PFC every
// ten), so a sample between two polls repeats the last value. A counter's
// baseline is therefore its last change, not its last sample, and its
// cadence is the receive time between its last two changes while it moves.
// A counter that was moving and repeats its value keeps its rate for up to
// 1.5 cadences, and its next change is rated over the time since the
// previous one: steady rates, not 0 and 10x. A counter that stood still
// (rate 0) and moves again is rated over one cadence (the increase is the
// last poll's), at least the last sample interval; one whose cadence is
// not known yet, over the time since its previous change when that was at
// most kMaxRefresh ago, else over the last sample interval.
//
// A polled counter's change is one poll's increase, whenever the target
// gets to send it: a target that takes a sample late (stamping it late too,
// as the value's poll time is not what it stamps) shows the poll of 14 s at
// 14.5 s instead of 14.1 s, and the poll of 15 s 0.6 s after it; rated over
// the time between changes the rate would read 0.7x and then 1.7x. So a
// counter that repeated its value since its last change, moving at a known
// cadence, and changed again within 0.75 to 1.5 cadences of it (or within
// 0.5 to 1.5, right after a change that came more than a quarter cadence
// late) is rated over one cadence, and the cadence follows those spans by
// an eighth of each difference. Any other span (a switch that polls faster
// now) is rated as it is and is the new cadence.
//
// Resets (never a negative or huge rate): a counter that goes down, a
// changed OpenConfig last-clear of the port, and a changed boot-time of the
// switch (a reload: every series restarts, and TakeReload() returns true
// once so that the bridge streams under a new boot id).
//
// LLDP (docs/gnmi-bridge.md, "LLDP neighbors"): the neighbor leaves of
// either dialect go into an LldpTable; a deleted neighbor (or port, or
// table) is removed. The neighbor set is complete once the LLDP group's
// stream has synced (SyncLldp) and until it ends (EndLldp); a restarted
// stream starts from an empty table (StartLldp), since what was deleted
// while it was down is not replayed. Build() publishes it as the
// snapshot's LldpState (source "gnmi"), whose version moves only when the
// neighbors do, so that the stream sends a new Inventory only then.
//
// Values that cannot be read are counted by reason (ErrorCounts()):
// DecodeStatusName() reasons for a whole update, "bad_path" (a port path
// without its port), "out_of_range" (digits beyond 2^64-1), "negative",
// "not_a_number" (text or a fraction where a counter belongs).
//
// Impossible rates: a byte rate above what the port can carry (the
// fastest speed it has reported, oper or negotiated, with kLineRateSlack
// for the receive clock's jitter) is never true, so it is refused (no rate
// that interval, counted as "above_line_rate") and the value becomes the
// next baseline.
//
// One source per series: a leaf that two subscription groups both deliver
// (a target answering overlapping paths, each sampled at its own moment) is
// taken from the group that delivered it first, and the other group's
// copies are ignored: a rate between two groups' samples would be taken
// over the milliseconds between them (4x line rate seen on a 400G port).
// The other group takes the series over only once the first has been
// silent for the handover time (its stream ended), starting a new
// baseline.
//
//   SwitchState state(Dialect::kOpenConfig);
//   state.Apply(notification, "", clock.MonotonicNanos());
//   agent::Snapshot snap;
//   std::vector<agent::SampleRate> rates;
//   state.Build(now_nanos, wall, stale_after, &snap, &rates);
//
// Thread-compatible: the session serialises calls with its own lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/lldp_neighbor.h"
#include "agent/rate.h"
#include "agent/sample.h"
#include "gnmi/dialect.h"
#include "gnmi/lldp_table.h"
#include "gnmi/path_map.h"
#include "gnmi/typed_value.h"
#include "proto/gnmi.pb.h"

namespace fabricdiag::gnmi {

class SwitchState {
 public:
  // How much longer than the receive interval the timestamps' interval may
  // be and still be the one a rate is taken over: a sample delivered this
  // much later than its successor. Beyond it the timestamps are a clock step
  // or a last-change time, and the receive interval counts.
  static constexpr absl::Duration kMaxTimestampLead = absl::Seconds(2);
  // How far above the port's speed a byte rate may be and still be
  // believed: a sample received late and the next on time shorten the
  // receive interval by the delay (50 ms of a 1 s interval is 5%), and
  // octet counters of a saturated port sit just below the speed (they
  // leave out the 20 bytes of preamble and gap per frame).
  static constexpr double kLineRateSlack = 1.1;
  // The longest time between two polls of a counter that a switch is
  // believed to have (SONiC's slowest default flex counter poll is 10 s):
  // two changes further apart are a counter that stood still in between.
  static constexpr absl::Duration kMaxRefresh = absl::Seconds(30);

  // `handover`: the silence of the group a series comes from after which
  // another group that delivers the same leaf takes it over (the bridge
  // uses its staleness, three intervals and at least 3 s).
  explicit SwitchState(Dialect dialect,
                       absl::Duration handover = absl::Seconds(3))
      : dialect_(dialect),
        handover_nanos_(absl::ToInt64Nanoseconds(handover)) {}

  // Applies `notification`, received at `rx_nanos` (monotonic) on the
  // subscription group `group` (an index the caller keeps stable). `db` is
  // the database the group subscribed to (SONiC), used when the
  // notification's prefix has no target.
  void Apply(const ::gnmi::Notification& notification, absl::string_view db,
             int64_t rx_nanos, size_t group = 0);

  // The latest values as a snapshot taken at `now_nanos` / `wall`, and one
  // rate per sample. Series not updated within `stale_after` are left out
  // (the encoder reports them absent). A reset is reported once.
  void Build(int64_t now_nanos, absl::Time wall, absl::Duration stale_after,
             agent::Snapshot* snapshot, std::vector<agent::SampleRate>* rates);

  // True once after the switch's boot-time changed (a reload).
  bool TakeReload();

  // The LLDP group's stream started (the table empties), delivered its
  // initial state, ended.
  void StartLldp();
  void SyncLldp() { lldp_synced_ = true; }
  void EndLldp() { lldp_synced_ = false; }
  // Neighbors sent (complete) and held without a chassis or port id.
  size_t lldp_neighbors() const { return lldp_neighbor_count_; }
  size_t lldp_incomplete() const { return lldp_.incomplete(); }
  bool lldp_synced() const { return lldp_synced_; }

  // Leaves applied (values of series and attributes) over the lifetime.
  uint64_t updates() const { return updates_; }
  // Monotonic nanos of the last applied leaf; 0 before the first.
  int64_t last_update_nanos() const { return last_update_nanos_; }
  uint64_t resets() const { return resets_; }
  const std::map<std::string, uint64_t>& ErrorCounts() const { return errors_; }
  void CountError(const std::string& reason) { ++errors_[reason]; }

 private:
  struct Stamp;
  struct Series {
    std::shared_ptr<const agent::SeriesDesc> desc;
    uint64_t raw = 0;
    int64_t rx_nanos = 0;  // the last update
    // The baseline of the next rate: when `raw` was first received (the
    // update where the counter last moved) and its timestamp (0 when the
    // notification had none).
    int64_t base_rx_nanos = 0;
    int64_t base_timestamp_nanos = 0;
    // The baseline is a change of the counter, not its first value or a
    // value after a reset: the time since it is a cadence.
    bool base_is_change = false;
    // The counter's cadence: receive time between its last two changes
    // while it moved (0: not known yet), smoothed while the switch polls it
    // less often than it is sampled.
    int64_t cadence_nanos = 0;
    // The time the last rate was taken over, before it was made one
    // cadence (0: none yet).
    int64_t last_span_nanos = 0;
    // A sample repeated the baseline's value: the switch polls the counter
    // less often than it is sampled.
    bool repeated = false;
    size_t group = 0;  // the subscription group it comes from
    std::optional<double> per_second;
    std::optional<uint64_t> delta;
    // The value is no baseline for the next rate (the port was cleared or
    // the switch reloaded since): the next update starts afresh.
    bool stale_baseline = false;
    bool reset_pending = false;  // reported with the next snapshot
    bool wrapped = false;

    void Rebase(const Stamp& stamp);
  };
  struct Port {
    std::string operstate;
    double speed = 0;             // bytes/s from port-speed / speed
    double negotiated_speed = 0;  // bytes/s, wins when known
    double fastest = 0;           // bytes/s, the most either ever said
    std::string last_clear;       // raw value, "" before the first
  };
  using Key = std::pair<std::string, std::string>;  // device, series name
  // Orders keys and (device, name) views alike, so that a lookup allocates
  // nothing (one per leaf a switch sends).
  struct KeyLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::pair<absl::string_view, absl::string_view>(a.first,
                                                             a.second) <
             std::pair<absl::string_view, absl::string_view>(b.first, b.second);
    }
  };
  using KeyView = std::pair<absl::string_view, absl::string_view>;

  // When a notification was received, and the timestamp it carries.
  struct Stamp {
    int64_t rx_nanos = 0;         // monotonic
    int64_t timestamp_nanos = 0;  // the target's clock; 0 when none
    size_t group = 0;
  };
  void ApplyUpdate(const ::gnmi::Update& update, const ::gnmi::Path& prefix,
                   absl::string_view db, Stamp stamp);
  void ApplyLeaf(absl::string_view db, const PathView& path,
                 const Scalar& value, Stamp stamp);
  void ApplySeries(absl::string_view device, bool last_clear,
                   const Scalar& value, Stamp stamp);
  // Records a speed (bytes/s) `device` reported.
  void SetSpeed(absl::string_view device, double bytes_per_second,
                bool negotiated);
  // False (counted) when `per_second` of `s` is more than `device` can
  // carry.
  bool Possible(const Series& s, absl::string_view device, double per_second);
  void ApplyDelete(const ::gnmi::Path& prefix, const ::gnmi::Path& path,
                   absl::string_view db);
  // A deleted LLDP path (neighbor, port, table or field); false when `p` is
  // not an LLDP path.
  bool ApplyLldpDelete(absl::string_view db, const PathView& p);
  void ApplyLldp(const LeafTarget& t, const Scalar& value);
  // The LldpState for the next snapshot, rebuilt when the table changed.
  std::shared_ptr<const agent::LldpState> LldpSnapshot();
  // Every series of `device` (all series when empty) restarts.
  void ResetSeries(absl::string_view device, int64_t rx_nanos);
  // The description of a series, shared with every other switch of the
  // process that has the same port and series.
  std::shared_ptr<const agent::SeriesDesc> Describe(absl::string_view device,
                                                    const std::string& name);
  static std::shared_ptr<const agent::SeriesDesc> MakeDesc(
      Dialect dialect, absl::string_view device, const std::string& name);

  const Dialect dialect_;
  const int64_t handover_nanos_;
  std::map<Key, Series, KeyLess> series_;
  std::map<std::string, Port, std::less<>> ports_;
  OidNames oids_;
  std::string boot_time_;
  bool reload_ = false;
  uint64_t updates_ = 0;
  int64_t last_update_nanos_ = 0;
  uint64_t resets_ = 0;
  std::map<std::string, uint64_t> errors_;
  LldpTable lldp_;
  bool lldp_synced_ = false;
  std::shared_ptr<const agent::LldpState> lldp_state_;
  uint64_t lldp_built_generation_ = 0;
  size_t lldp_neighbor_count_ = 0;
  std::string name_;  // scratch for MapLeaf
  PathView path_;     // scratch for ApplyUpdate
};

}  // namespace fabricdiag::gnmi
