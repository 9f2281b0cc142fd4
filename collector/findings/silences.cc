#include "collector/findings/silences.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/names.h"

namespace fabricdiag::collector {
namespace {

// The longest comment kept: a sentence or a ticket link, not a document.
constexpr size_t kMaxComment = 1024;

bool Ended(const v1::Silence& s, absl::Time now) {
  return s.ends_unix_nanos() <= absl::ToUnixNanos(now);
}

}  // namespace

std::string FileMarkState::path() const { return store_->marks_path(); }

std::string FileMarkState::Describe() const {
  return absl::StrCat("--state_dir=", store_->dir());
}

absl::StatusOr<std::vector<v1::OperatorMark>> FileMarkState::ReadAll() {
  absl::MutexLock lock(&mu_);
  if (!loaded_) {
    absl::StatusOr<ObjectFile> file = ReadObjectFile(path());
    v1::OperatorMarks marks;
    if (file.ok() && !marks.ParseFromString(file->payload)) {
      file = absl::DataLossError("not an operator marks file (undecodable)");
    }
    if (absl::IsDataLoss(file.status())) {
      store_->QuarantineFile(path(), file.status().message()).IgnoreError();
    } else if (!file.ok() && !absl::IsNotFound(file.status())) {
      return file.status();
    }
    for (v1::OperatorMark& m : *marks.mutable_marks()) {
      std::string key = MarkKey(m);
      if (!key.empty()) marks_[std::move(key)] = std::move(m);
    }
    loaded_ = true;
  }
  std::vector<v1::OperatorMark> out;
  out.reserve(marks_.size());
  for (const auto& [key, mark] : marks_) out.push_back(mark);
  return out;
}

absl::Status FileMarkState::Put(const v1::OperatorMark& mark) {
  const std::string key = MarkKey(mark);
  if (key.empty()) return absl::InvalidArgumentError("an empty mark");
  absl::MutexLock lock(&mu_);
  const absl::Time now = MarkTime(mark);
  std::map<std::string, v1::OperatorMark> next = marks_;
  next[key] = mark;
  v1::OperatorMarks all;
  for (auto it = next.begin(); it != next.end();) {
    if (it->second.has_silence() &&
        it->second.silence().ends_unix_nanos() <
            absl::ToUnixNanos(now - kKeepExpiredSilences)) {
      it = next.erase(it);
      continue;
    }
    *all.add_marks() = it->second;
    ++it;
  }
  // Written before it is served: a mark that could not be written is an
  // error to the operator, not a mark that vanishes at the next restart.
  // The file and the marks held stay as they were (a full disk), and the
  // next write that fits writes them all.
  if (absl::Status s = store_->WriteMarks(all.SerializeAsString(), now);
      !s.ok()) {
    LogWarning(absl::StrCat("operator marks: ", s.message(),
                            "; the mark is refused, the marks held and ",
                            path(), " stay as they were"));
    return s;
  }
  marks_ = std::move(next);
  return absl::OkStatus();
}

Marks::Marks(MarkState* state, const Clock& clock)
    : state_(state), clock_(clock) {}

Marks::~Marks() {
  if (watching_) state_->StopWatching();
}

absl::Status Marks::Load() {
  absl::StatusOr<std::vector<v1::OperatorMark>> all = state_->ReadAll();
  if (!all.ok()) return all.status();
  {
    absl::MutexLock lock(&mu_);
    for (const v1::OperatorMark& m : *all) Apply(m);
  }
  state_->Watch([this](const v1::OperatorMark& m) {
    std::function<void(const v1::NodeForget&)> hook;
    {
      absl::MutexLock lock(&mu_);
      Apply(m);
      if (m.has_forget()) hook = on_watched_forget_;
    }
    if (hook) hook(m.forget());
  });
  watching_ = true;
  return absl::OkStatus();
}

void Marks::Apply(const v1::OperatorMark& mark) {
  switch (mark.mark_case()) {
    case v1::OperatorMark::kSilence:
      silences_[mark.silence().id()] = mark.silence();
      break;
    case v1::OperatorMark::kAck:
      acks_[mark.ack().finding_id()] = mark.ack();
      break;
    case v1::OperatorMark::kForget:
      forgets_[mark.forget().node()] = mark.forget();
      break;
    default:
      break;
  }
}

std::string Marks::NewSilenceId() {
  // Random, not a counter: collectors of a cluster create silences without
  // asking each other, and two must never pick the same id.
  static thread_local absl::BitGen gen;
  return absl::StrFormat("s-%016x", absl::Uniform<uint64_t>(gen));
}

absl::StatusOr<v1::Silence> Marks::CreateSilence(
    const v1::CreateSilenceRequest& request, absl::string_view who) {
  if (absl::Status s = CheckMatchers(request.matchers()); !s.ok()) return s;
  if (request.duration_seconds() <= 0) {
    return absl::InvalidArgumentError(
        "--for: missing or not positive (e.g. --for=4h)");
  }
  if (absl::Seconds(request.duration_seconds()) > kMaxSilence) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--for: at most ", absl::FormatDuration(kMaxSilence), " (30 days)"));
  }
  if (absl::StripAsciiWhitespace(request.comment()).empty()) {
    return absl::InvalidArgumentError(
        "--comment: required for a silence (say why, e.g. a ticket)");
  }
  if (request.comment().size() > kMaxComment) {
    return absl::InvalidArgumentError(
        absl::StrCat("--comment: longer than ", kMaxComment, " bytes"));
  }
  const absl::Time now = clock_.Now();
  v1::OperatorMark mark;
  v1::Silence& s = *mark.mutable_silence();
  s.set_id(NewSilenceId());
  *s.mutable_matchers() = request.matchers();
  s.set_who(std::string(who));
  s.set_created_unix_nanos(absl::ToUnixNanos(now));
  s.set_ends_unix_nanos(
      absl::ToUnixNanos(now + absl::Seconds(request.duration_seconds())));
  s.set_comment(request.comment());
  if (absl::Status st = state_->Put(mark); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  Apply(mark);
  return s;
}

absl::StatusOr<v1::Silence> Marks::ExpireSilence(absl::string_view id,
                                                 absl::string_view who) {
  const absl::Time now = clock_.Now();
  v1::OperatorMark mark;
  {
    absl::MutexLock lock(&mu_);
    auto it = silences_.find(std::string(id));
    if (it == silences_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no silence ", QuoteForMessage(id)));
    }
    if (Ended(it->second, now)) {
      v1::Silence s = it->second;
      s.set_expired(true);
      return s;
    }
    *mark.mutable_silence() = it->second;
  }
  mark.mutable_silence()->set_ends_unix_nanos(absl::ToUnixNanos(now));
  mark.mutable_silence()->set_expired_by(std::string(who));
  if (absl::Status st = state_->Put(mark); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  Apply(mark);
  v1::Silence s = mark.silence();
  s.set_expired(true);
  return s;
}

std::vector<v1::Silence> Marks::ListSilences() const {
  const absl::Time now = clock_.Now();
  std::vector<v1::Silence> out;
  {
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [id, s] : silences_) {
      if (s.ends_unix_nanos() < absl::ToUnixNanos(now - kKeepExpiredSilences)) {
        continue;
      }
      out.push_back(s);
      out.back().set_expired(Ended(s, now));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const v1::Silence& a, const v1::Silence& b) {
              if (a.created_unix_nanos() != b.created_unix_nanos()) {
                return a.created_unix_nanos() > b.created_unix_nanos();
              }
              return a.id() > b.id();
            });
  return out;
}

absl::StatusOr<v1::FindingAck> Marks::Ack(const v1::Finding& finding,
                                          absl::string_view comment,
                                          absl::string_view who) {
  if (comment.size() > kMaxComment) {
    return absl::InvalidArgumentError(
        absl::StrCat("--comment: longer than ", kMaxComment, " bytes"));
  }
  v1::OperatorMark mark;
  v1::FindingAck& ack = *mark.mutable_ack();
  ack.set_finding_id(finding.id());
  ack.set_who(std::string(who));
  ack.set_at_unix_nanos(absl::ToUnixNanos(clock_.Now()));
  ack.set_comment(std::string(comment));
  if (absl::Status st = state_->Put(mark); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  Apply(mark);
  return ack;
}

absl::StatusOr<v1::NodeForget> Marks::Forget(absl::string_view node,
                                             absl::string_view who) {
  v1::OperatorMark mark;
  v1::NodeForget& forget = *mark.mutable_forget();
  forget.set_node(std::string(node));
  forget.set_who(std::string(who));
  forget.set_at_unix_nanos(absl::ToUnixNanos(clock_.Now()));
  if (absl::Status st = state_->Put(mark); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  Apply(mark);
  return forget;
}

void Marks::OnWatchedForget(std::function<void(const v1::NodeForget&)> hook) {
  absl::MutexLock lock(&mu_);
  on_watched_forget_ = std::move(hook);
}

std::optional<absl::Time> Marks::ForgottenAt(absl::string_view node) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = forgets_.find(std::string(node));
  if (it == forgets_.end()) return std::nullopt;
  return absl::FromUnixNanos(it->second.at_unix_nanos());
}

std::vector<std::string> Marks::SilencedByLocked(const v1::Finding& finding,
                                                 absl::Time now) const {
  std::vector<std::string> ids;
  for (const auto& [id, s] : silences_) {
    if (!Ended(s, now) && SilenceMatches(s, finding)) ids.push_back(id);
  }
  return ids;
}

void Marks::Mark(v1::Finding* finding) const {
  finding->clear_acked();
  finding->clear_silenced_by();
  if (finding->state() != v1::FINDING_STATE_ACTIVE) return;
  absl::ReaderMutexLock lock(&mu_);
  auto ack = acks_.find(finding->id());
  if (ack != acks_.end()) *finding->mutable_acked() = ack->second;
  for (std::string& id : SilencedByLocked(*finding, clock_.Now())) {
    finding->add_silenced_by(std::move(id));
  }
}

bool Marks::Acked(const v1::Finding& finding) const {
  if (finding.state() != v1::FINDING_STATE_ACTIVE) return false;
  absl::ReaderMutexLock lock(&mu_);
  return acks_.count(finding.id()) > 0;
}

bool Marks::Silenced(const v1::Finding& finding) const {
  if (finding.state() != v1::FINDING_STATE_ACTIVE) return false;
  absl::ReaderMutexLock lock(&mu_);
  return !SilencedByLocked(finding, clock_.Now()).empty();
}

}  // namespace fabricdiag::collector
