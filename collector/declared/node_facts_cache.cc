#include "collector/declared/node_facts_cache.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/prom_text.h"
#include "google/protobuf/util/message_differencer.h"

namespace fabricdiag::collector {
namespace {

void Cut(std::string* s) {
  if (s->size() > kMaxFactsTextBytes) s->resize(kMaxFactsTextBytes);
}

void CutNeighbor(v1::LldpNeighbor* n) {
  for (std::string* s :
       {n->mutable_system_name(), n->mutable_chassis_id(),
        n->mutable_chassis_id_type(), n->mutable_port_id(),
        n->mutable_port_id_type(), n->mutable_port_description(),
        n->mutable_management_address()}) {
    Cut(s);
  }
}

// Keeps the first `max` entries of `field` for which `keep` holds.
template <typename Field, typename Keep>
void KeepValid(Field* field, size_t max, Keep keep) {
  int out = 0;
  for (int i = 0; i < field->size(); ++i) {
    if (static_cast<size_t>(out) >= max) break;
    if (!keep(field->Get(i))) continue;
    if (out != i) field->SwapElements(out, i);
    ++out;
  }
  while (field->size() > out) field->RemoveLast();
}

}  // namespace

absl::Status CheckFactsNode(absl::string_view node) {
  if (IsValidNodeName(node)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("node facts: node ",
                                                 QuoteForMessage(node),
                                                 " is not ", kNodeNamePattern));
}

absl::StatusOr<v1::NodeFacts> SanitizeNodeFacts(v1::NodeFacts facts) {
  if (absl::Status s = CheckFactsNode(facts.node()); !s.ok()) return s;
  Cut(facts.mutable_lldp_source());
  KeepValid(facts.mutable_lldp_neighbors(), kMaxFactsNeighbors,
            [](const v1::LldpNeighbor& n) {
              return IsValidDeviceName(n.local_port());
            });
  for (v1::LldpNeighbor& n : *facts.mutable_lldp_neighbors()) CutNeighbor(&n);
  KeepValid(facts.mutable_gpu_nics(), kMaxFactsGpus, [](const v1::GpuNic& g) {
    return (g.device().empty() || IsValidDeviceName(g.device())) &&
           (g.netdev().empty() || IsValidDeviceName(g.netdev()));
  });
  for (v1::GpuNic& g : *facts.mutable_gpu_nics()) {
    Cut(g.mutable_gpu_pci());
    Cut(g.mutable_distance());
  }
  auto* netdevs = facts.mutable_rdma_device_of_netdev();
  for (auto it = netdevs->begin(); it != netdevs->end();) {
    if (!IsValidDeviceName(it->first) || !IsValidDeviceName(it->second)) {
      netdevs->erase(it++);
    } else {
      ++it;
    }
  }
  while (netdevs->size() > kMaxFactsNetdevs) netdevs->erase(netdevs->begin());
  return facts;
}

v1::NodeFacts MergeNodeFacts(const v1::NodeFacts* held,
                             v1::NodeFacts incoming) {
  if (held == nullptr) return incoming;
  if (incoming.lldp_source().empty()) {
    incoming.set_lldp_source(held->lldp_source());
    *incoming.mutable_lldp_neighbors() = held->lldp_neighbors();
  }
  if (!incoming.gpus_read()) {
    incoming.set_gpus_read(held->gpus_read());
    *incoming.mutable_gpu_nics() = held->gpu_nics();
  }
  return incoming;
}

bool SameNodeFacts(const v1::NodeFacts& a, const v1::NodeFacts& b) {
  google::protobuf::util::MessageDifferencer differ;
  differ.IgnoreField(
      v1::NodeFacts::descriptor()->FindFieldByName("reported_unix_nanos"));
  return differ.Compare(a, b);
}

void AppendNodeFactsMetrics(const NodeFactsStats& stats, std::string* out) {
  PromWriter w(out);
  w.Family("fabricdiag_node_facts_nodes",
           "Nodes whose LLDP neighbors and GPU-NIC pairs this collector holds.",
           PromType::kGauge);
  w.Sample(static_cast<double>(stats.nodes));
  w.Family("fabricdiag_node_facts_writes_failed_total",
           "Node facts refused (an invalid node name) or not written to the "
           "cluster's bucket.",
           PromType::kCounter);
  w.Sample(static_cast<double>(stats.writes_failed));
  w.Family("fabricdiag_node_facts_queue_dropped_total",
           "Node facts writes dropped while queued: replaced by a newer one "
           "of the same node, or the queue was full.",
           PromType::kCounter);
  w.Sample(static_cast<double>(stats.queue_dropped));
}

NodeFactsCache::NodeFactsCache()
    : published_(std::make_shared<const NodeFactsMap>()) {}

absl::StatusOr<NodeFactsCache::Merged> NodeFactsCache::Merge(
    const v1::NodeFacts& facts) const {
  absl::StatusOr<v1::NodeFacts> clean = SanitizeNodeFacts(facts);
  if (!clean.ok()) return clean.status();
  absl::MutexLock lock(&mu_);
  auto it = held_.find(clean->node());
  const v1::NodeFacts* held = it == held_.end() ? nullptr : it->second.get();
  Merged out;
  out.facts = MergeNodeFacts(held, *std::move(clean));
  out.changed = held == nullptr || !SameNodeFacts(*held, out.facts);
  return out;
}

absl::StatusOr<bool> NodeFactsCache::Apply(const v1::NodeFacts& facts) {
  absl::StatusOr<v1::NodeFacts> clean = SanitizeNodeFacts(facts);
  if (!clean.ok()) return clean.status();
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const v1::NodeFacts>& held = held_[clean->node()];
  v1::NodeFacts merged = MergeNodeFacts(held.get(), *std::move(clean));
  if (held != nullptr && SameNodeFacts(*held, merged)) return false;
  // A new object: the snapshots that hold the old one keep it as it was.
  held = std::make_shared<const v1::NodeFacts>(std::move(merged));
  ++generation_;
  return true;
}

bool NodeFactsCache::Remove(absl::string_view node) {
  absl::MutexLock lock(&mu_);
  if (held_.erase(node) == 0) return false;
  ++generation_;
  return true;
}

std::shared_ptr<const NodeFactsMap> NodeFactsCache::Snapshot() const {
  absl::MutexLock lock(&mu_);
  if (published_generation_ != generation_) {
    published_ = std::make_shared<const NodeFactsMap>(held_);
    published_generation_ = generation_;
  }
  return published_;
}

uint64_t NodeFactsCache::Generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

size_t NodeFactsCache::nodes() const {
  absl::MutexLock lock(&mu_);
  return held_.size();
}

}  // namespace fabricdiag::collector
