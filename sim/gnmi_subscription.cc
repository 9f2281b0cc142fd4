#include "sim/gnmi_subscription.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::sim {
namespace {

// One Notification per prefix, in the order the prefixes first appear.
std::vector<::gnmi::SubscribeResponse> Notifications(
    int64_t timestamp, const std::vector<const Leaf*>& leaves) {
  std::vector<::gnmi::SubscribeResponse> out;
  std::map<std::string, size_t> by_prefix;
  for (const Leaf* leaf : leaves) {
    auto [it, added] = by_prefix.emplace(leaf->prefix_text, out.size());
    if (added) {
      ::gnmi::Notification* n = out.emplace_back().mutable_update();
      n->set_timestamp(timestamp);
      *n->mutable_prefix() = leaf->prefix;
    }
    ::gnmi::Update* u = out[it->second].mutable_update()->add_update();
    *u->mutable_path() = leaf->path;
    *u->mutable_val() = leaf->value;
  }
  return out;
}

}  // namespace

absl::StatusOr<SubscriptionSet> SubscriptionSet::Create(
    gnmi::Dialect dialect, const ::gnmi::SubscriptionList& list, bool overlap) {
  if (list.mode() == ::gnmi::SubscriptionList::POLL) {
    return absl::UnimplementedError("POLL subscriptions are not implemented");
  }
  if (list.subscription_size() == 0) {
    return absl::InvalidArgumentError(
        "the SubscriptionList has no subscription");
  }
  SubscriptionSet set;
  set.once_ = list.mode() == ::gnmi::SubscriptionList::ONCE;
  set.updates_only_ = list.updates_only();
  set.overlap_ = overlap;
  for (const ::gnmi::Subscription& s : list.subscription()) {
    absl::StatusOr<Selector> sel =
        Selector::Create(dialect, list.prefix(), s.path());
    if (!sel.ok()) return sel.status();
    Sub sub(*std::move(sel));
    sub.mode = s.mode();
    sub.interval_nanos = static_cast<int64_t>(s.sample_interval());
    sub.suppress_redundant = s.suppress_redundant();
    set.subs_.push_back(std::move(sub));
  }
  return set;
}

absl::Status SubscriptionSet::Bind(const std::vector<Leaf>& leaves) {
  for (Sub& sub : subs_) {
    sub.leaves.clear();
    sub.overlapping.clear();
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (sub.selector.Matches(leaves[i])) sub.leaves.push_back(i);
    }
    const std::optional<Selector> port = sub.mode != ::gnmi::ON_CHANGE
                                             ? sub.selector.PortSubtree()
                                             : std::nullopt;
    for (size_t i = 0; overlap_ && port.has_value() && i < leaves.size(); ++i) {
      if (leaves[i].counter && !sub.selector.Matches(leaves[i]) &&
          port->Matches(leaves[i])) {
        sub.overlapping.push_back(i);
      }
    }
    if (sub.leaves.empty() && sub.overlapping.empty()) {
      return absl::UnimplementedError(absl::StrCat(
          "path ", sub.selector.text(), " is not implemented by this target"));
    }
  }
  return absl::OkStatus();
}

void SubscriptionSet::Due(const Snapshot& snap, bool all, Sub* sub,
                          std::vector<const Leaf*>* out,
                          std::vector<const Leaf*>* late) {
  const bool sample = sub->mode != ::gnmi::ON_CHANGE;
  if (!all && sample && sub->interval_nanos > 0 &&
      (snap.timestamp_nanos - sub->last_sample_nanos) * 10 <
          sub->interval_nanos * 9) {
    return;
  }
  if (sample) sub->last_sample_nanos = snap.timestamp_nanos;
  const bool only_changed = !all && (!sample || sub->suppress_redundant);
  auto send = [&](const Leaf& leaf, std::vector<const Leaf*>* to) {
    std::string value = leaf.value.SerializeAsString();
    std::string& last = sub->sent[leaf.key];
    if (only_changed && last == value) return;
    last = std::move(value);
    to->push_back(&leaf);
  };
  for (size_t i : sub->leaves) send(snap.leaves[i], out);
  const std::vector<Leaf>& earlier =
      snap.earlier.size() == snap.leaves.size() ? snap.earlier : snap.leaves;
  for (size_t i : sub->overlapping) send(earlier[i], late);
}

std::vector<::gnmi::SubscribeResponse> SubscriptionSet::Respond(
    const Snapshot& snapshot, const std::vector<const Leaf*>& due,
    const std::vector<const Leaf*>& late) {
  std::vector<::gnmi::SubscribeResponse> out =
      Notifications(snapshot.timestamp_nanos, due);
  const bool earlier = snapshot.earlier.size() == snapshot.leaves.size();
  for (::gnmi::SubscribeResponse& r :
       Notifications(earlier ? snapshot.earlier_timestamp_nanos
                             : snapshot.timestamp_nanos,
                     late)) {
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<::gnmi::SubscribeResponse> SubscriptionSet::Initial(
    const Snapshot& snapshot) {
  std::vector<const Leaf*> due;
  std::vector<const Leaf*> late;
  for (Sub& sub : subs_) Due(snapshot, /*all=*/true, &sub, &due, &late);
  if (updates_only_) {
    due.clear();
    late.clear();
  }
  std::vector<::gnmi::SubscribeResponse> out = Respond(snapshot, due, late);
  out.emplace_back().set_sync_response(true);
  return out;
}

std::vector<::gnmi::SubscribeResponse> SubscriptionSet::Next(
    const Snapshot& snapshot) {
  std::vector<const Leaf*> due;
  std::vector<const Leaf*> late;
  for (Sub& sub : subs_) Due(snapshot, /*all=*/false, &sub, &due, &late);
  return Respond(snapshot, due, late);
}

}  // namespace fabricdiag::sim
