// The port of every layout NIC in one view, looked up once per view.
//
// A pass asks its view for the same layout NICs many times: straggler_nic
// for each group a NIC is in, and again to update the baselines;
// hot_expert_incast twice (as itself, and relaxed for congestion);
// ecmp_imbalance per rail. Each FabricView::Find is a hash probe and name
// compares in memory the analyzer does not otherwise read; at 200k GPUs
// those lookups were nearly a third of the analysis. NicPorts resolves
// each (host, NIC) of each layout once, looking each host up once
// (FabricView::PortsOfNode), and answers by index.
//
//   NicPorts ports(view, in.layouts);
//   const LayoutPorts job = ports.Of(model);
//   const PortView* p = job.At(ref.host, ref.nic);  // view.Find(host, nic)
//
// Immutable after construction; the view and the layouts must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "analysis/fabric_view.h"
#include "analysis/layout_model.h"

namespace fabricdiag::analysis {

struct AnalysisInput;  // analysis/analyzer.h

// One layout's (host, NIC) pairs that hold ranks, and their ports, by the
// pairs' numbers (LayoutModel::HostNicAt(): a layout may name a NIC per
// rank: hosts x NIC names can be 10^9 while the pairs number the ranks at
// most).
struct NicPortTable {
  std::vector<const PortView*> ports;  // null: not in the view
};

// One layout's NICs in one view.
class LayoutPorts {
 public:
  // What view.Find(Hosts()[host], Nics()[nic]) gives, for a NIC the
  // layout places ranks on (the only ones analyzers ask for); null for the
  // others and for an index out of range (kNoNic included).
  const PortView* At(uint32_t host, uint32_t nic) const;

 private:
  friend class NicPorts;
  LayoutPorts(const FabricView* view, const LayoutModel* model,
              const NicPortTable* table)
      : view_(view), model_(model), table_(table) {}

  const FabricView* view_;
  const LayoutModel* model_;
  const NicPortTable* table_;  // null: ask the view (a layout not resolved)
};

class LayoutsByHost;

class NicPorts {
 public:
  // Each host of `layouts` is looked up in the view; or, given
  // `by_host` (which must index every one of `layouts`) and layouts that
  // list more hosts than the view has nodes, each node of the view among
  // their hosts: a switch shard's view holds a few hundred nodes of jobs
  // that list thousands.
  NicPorts(const FabricView& view, absl::Span<const LayoutModel* const> layouts,
           const LayoutsByHost* by_host = nullptr);
  NicPorts(const NicPorts&) = delete;
  NicPorts& operator=(const NicPorts&) = delete;

  const FabricView& view() const { return *view_; }
  // `model`'s NICs; for a layout not given to the constructor, a lookup
  // that asks the view each time.
  LayoutPorts Of(const LayoutModel& model) const;

 private:
  const FabricView* view_;
  absl::flat_hash_map<const LayoutModel*, NicPortTable> tables_;
};

// The layouts of `layouts` (nulls skipped) with a host that has a port in
// `view`, in their order: a job none of whose hosts report has nothing for
// the rate analyzers. Asks the view per host, stopping at the first that
// reports.
std::vector<const LayoutModel*> LayoutsReportingIn(
    const FabricView& view, absl::Span<const LayoutModel* const> layouts);

// LayoutsReportingIn() over many views of one pass, each at the cost of
// its own ports rather than of every layout's hosts: a switch shard's view
// holds a few thousand of a 1M-GPU fabric's nodes, and its layouts are
// every job's (125,000 hosts to ask about, per view).
class LayoutsByHost {
 public:
  // `layouts` (nulls skipped) must outlive this.
  explicit LayoutsByHost(absl::Span<const LayoutModel* const> layouts);

  // LayoutsReportingIn(view, layouts), in the same order. `view` must be
  // Finish()ed.
  std::vector<const LayoutModel*> ReportingIn(const FabricView& view) const;

  // A layout that lists a host, and the host's index in it.
  struct HostIn {
    uint32_t layout;  // index into layouts()
    uint32_t host;    // LayoutModel::Hosts() index
  };
  // The layouts listing `host`, ascending; empty when none does.
  absl::Span<const HostIn> LayoutsOf(absl::string_view host) const;
  // The layouts given, nulls left out.
  absl::Span<const LayoutModel* const> layouts() const { return layouts_; }

 private:
  std::vector<const LayoutModel*> layouts_;
  // Each host's layouts, ascending.
  absl::flat_hash_map<absl::string_view, std::vector<HostIn>> by_host_;
};

// in.nic_ports when it was built for in.view, else one built into *local
// (tests and one-off callers, and a view the caller did not resolve).
const NicPorts& NicPortsOf(const AnalysisInput& in,
                           std::optional<NicPorts>* local);

}  // namespace fabricdiag::analysis
