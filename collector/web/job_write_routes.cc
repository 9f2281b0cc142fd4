#include "collector/web/job_write_routes.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "analysis/layout_parse.h"
#include "collector/web/json_answers.h"
#include "collector/web/web_api.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kPrefix[] = "/api/v1/jobs/";
constexpr char kRenew[] = "/renew";
// How long a write may wait for the declared state (a cluster that does
// not answer) before it answers 504.
constexpr absl::Duration kWriteTimeout = absl::Seconds(10);

HttpResponse Error(const absl::Status& status) { return JsonError(status); }

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

absl::StatusOr<Json> ParseBody(absl::string_view body, bool empty_is_object) {
  return ParseJsonBody(body, empty_is_object);
}

// An optional "lease_seconds": nullopt when absent; a whole number of
// seconds, else InvalidArgument.
absl::StatusOr<std::optional<int64_t>> LeaseSeconds(const Json& body) {
  auto it = body.find("lease_seconds");
  if (it == body.end()) return std::nullopt;
  int64_t seconds = 0;
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    seconds = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                  ? std::numeric_limits<int64_t>::max()
                  : static_cast<int64_t>(v);
  } else if (it->is_number_integer()) {
    seconds = it->get<int64_t>();
  } else {
    return Invalid(
        "lease_seconds",
        absl::StrCat("expected a whole number of seconds, not ", it->dump()));
  }
  RETURN_IF_ERROR(ValidateDeclaration("cli", "", seconds));
  return seconds;
}

absl::StatusOr<std::string> StringField(const Json& body, absl::string_view key,
                                        std::string fallback) {
  auto it = body.find(std::string(key));
  if (it == body.end()) return fallback;
  if (!it->is_string()) {
    return Invalid(key, absl::StrCat("expected a string, not ", it->dump()));
  }
  return it->get<std::string>();
}

// The job named by the path ("/api/v1/jobs/moe-42" or its "/renew");
// InvalidArgument when it is not a job name.
absl::StatusOr<std::string> PathJob(absl::string_view path, bool renew) {
  absl::string_view job = absl::StripPrefix(path, kPrefix);
  if (renew) job = absl::StripSuffix(job, kRenew);
  if (!IsValidJobName(job)) {
    return absl::NotFoundError(
        absl::StrCat(QuoteForMessage(job), " is not a job name"));
  }
  return std::string(job);
}

// The condition of a PUT: `If-Match: "N"` (only when the layout is at
// revision N; "0": only when the job has none) or `If-None-Match: *` (only
// when it has none); nullopt without either. One strong entity tag of
// digits, as the PUT's ETag gives it: a weak tag, a list or `*` in If-Match
// is a 400 (this resource offers no other condition).
absl::StatusOr<std::optional<uint64_t>> IfRevision(const HttpRequest& r) {
  const absl::string_view match = absl::StripAsciiWhitespace(r.if_match);
  const absl::string_view none = absl::StripAsciiWhitespace(r.if_none_match);
  if (!match.empty() && !none.empty()) {
    return absl::InvalidArgumentError(
        "If-Match and If-None-Match: send one (If-Match: \"REVISION\", or "
        "If-None-Match: * for a new job)");
  }
  if (!none.empty()) {
    if (none != "*") {
      return absl::InvalidArgumentError(
          "If-None-Match: a PUT takes only * (write only a new job)");
    }
    return std::optional<uint64_t>(0);
  }
  if (match.empty()) return std::optional<uint64_t>();
  uint64_t revision = 0;
  if (match.size() < 3 || match.front() != '"' || match.back() != '"' ||
      !absl::SimpleAtoi(match.substr(1, match.size() - 2), &revision) ||
      !absl::ascii_isdigit(static_cast<unsigned char>(match[1]))) {
    return absl::InvalidArgumentError(
        absl::StrCat("If-Match: expected one revision as an entity tag, "
                     "\"123\" (the ETag of the PUT, the revision of the "
                     "job), got ",
                     QuoteForMessage(match.substr(0, 64))));
  }
  return std::optional<uint64_t>(revision);
}

Json DeclarationJson(const v1::LayoutDeclaration& d) {
  Json j;
  j["source"] = d.source();
  j["owner"] = d.owner();
  const std::optional<absl::Time> expiry = LeaseExpiry(d);
  j["lease_seconds"] = d.lease_seconds();
  j["expires"] = expiry.has_value() ? TimeJson(*expiry) : Json(nullptr);
  return j;
}

HttpResponse Put(const JobWriteSources& s, const HttpRequest& r,
                 absl::string_view job) {
  absl::StatusOr<std::optional<uint64_t>> if_revision = IfRevision(r);
  if (!if_revision.ok()) return Error(if_revision.status());
  absl::StatusOr<JobDeclaration> declared = ParseJobDeclaration(job, r.body);
  if (!declared.ok()) return Error(declared.status());
  *declared->layout.mutable_declaration() =
      NewDeclaration(declared->source, declared->owner, declared->lease_seconds,
                     s.clock->Now());
  const absl::Time answer_by = absl::Now() + kWriteTimeout;
  absl::StatusOr<ApplyResult> applied =
      if_revision->has_value()
          ? s.registry->ApplyIf(declared->layout, **if_revision, answer_by)
          : s.registry->Apply(declared->layout, answer_by);
  if (!applied.ok()) {
    HttpResponse error = Error(applied.status());
    // Not at that revision here, or changed through another collector
    // meanwhile (the write's compare-and-set): the condition failed.
    if (if_revision->has_value() &&
        (absl::IsFailedPrecondition(applied.status()) ||
         absl::IsAborted(applied.status()))) {
      error.status = 412;
    }
    return error;
  }
  if (s.on_layouts_changed) s.on_layouts_changed(std::string(job), answer_by);
  const uint64_t revision = LayoutRevision(*applied->entry);
  Json body;
  body["job"] = std::string(job);
  body["revision"] = revision;
  Json warnings = Json::array();
  if (s.warnings) {
    for (std::string& w : s.warnings(applied->entry->applied_layout)) {
      warnings.push_back(std::move(w));
    }
  }
  body["warnings"] = std::move(warnings);
  body["declaration"] =
      DeclarationJson(applied->entry->applied_layout.declaration());
  HttpResponse ok = JsonResponse(applied->replaced ? 200 : 201, body);
  ok.headers.push_back({"ETag", absl::StrCat("\"", revision, "\"")});
  return ok;
}

HttpResponse Renew(const JobWriteSources& s, const HttpRequest& r,
                   absl::string_view job) {
  absl::StatusOr<Json> body = ParseBody(r.body, /*empty_is_object=*/true);
  if (!body.ok()) return Error(body.status());
  for (const auto& [key, value] : body->items()) {
    if (key != "lease_seconds") {
      return Error(Invalid(key, "unknown field (lease_seconds)"));
    }
  }
  absl::StatusOr<std::optional<int64_t>> seconds = LeaseSeconds(*body);
  if (!seconds.ok()) return Error(seconds.status());
  absl::StatusOr<v1::LayoutDeclaration> renewed =
      s.leases->Renew(job, *seconds, absl::Now() + kWriteTimeout);
  if (!renewed.ok()) return Error(renewed.status());
  Json out;
  out["job"] = std::string(job);
  out["declaration"] = DeclarationJson(*renewed);
  return JsonResponse(200, out);
}

HttpResponse Delete(const JobWriteSources& s, absl::string_view job) {
  const absl::Time answer_by = absl::Now() + kWriteTimeout;
  absl::Status deleted = s.registry->Delete(job, answer_by);
  if (absl::IsNotFound(deleted)) {
    return JsonResponse(200, {{"job", std::string(job)}, {"deleted", false}});
  }
  if (!deleted.ok()) return Error(deleted);
  if (s.on_layouts_changed) s.on_layouts_changed(std::string(job), answer_by);
  return JsonResponse(200, {{"job", std::string(job)}, {"deleted", true}});
}

HttpResponse Handle(const JobWriteSources& s, const HttpRequest& r) {
  if (!r.query.empty()) {
    return Error(absl::InvalidArgumentError(
        absl::StrCat(r.method, " ", kPrefix, "{job} takes no query")));
  }
  const bool renew = absl::EndsWith(r.path, kRenew);
  if (renew != (r.method == "POST")) {
    HttpResponse wrong = Error(absl::NotFoundError(
        renew ? "only POST renews a lease"
              : absl::StrCat("POST serves only ", kPrefix, "{job}/renew")));
    wrong.status = 405;
    wrong.headers.push_back(
        {"Allow", renew ? "POST" : "GET, HEAD, PUT, DELETE"});
    return wrong;
  }
  absl::StatusOr<std::string> job = PathJob(r.path, renew);
  if (!job.ok()) return Error(job.status());
  if (renew) return Renew(s, r, *job);
  if (r.method == "PUT") return Put(s, r, *job);
  return Delete(s, *job);
}

}  // namespace

absl::StatusOr<JobDeclaration> ParseJobDeclaration(absl::string_view path_job,
                                                   absl::string_view body) {
  ASSIGN_OR_RETURN(Json j, ParseBody(body, /*empty_is_object=*/false));
  JobDeclaration out;
  ASSIGN_OR_RETURN(out.lease_seconds, LeaseSeconds(j));
  ASSIGN_OR_RETURN(out.source, StringField(j, "source", "http"));
  ASSIGN_OR_RETURN(out.owner, StringField(j, "owner", ""));
  RETURN_IF_ERROR(ValidateDeclaration(out.source, out.owner, std::nullopt));
  j.erase("lease_seconds");
  j.erase("source");
  j.erase("owner");
  if (j.find("job") == j.end()) j["job"] = std::string(path_job);
  // The layout file's own parser, so that every message is the CLI's.
  ASSIGN_OR_RETURN(out.layout,
                   analysis::ParseLayout(
                       j.dump(-1, ' ', false, Json::error_handler_t::strict)));
  // Compared once parsed: `"job": 7` is the job "7", as in a layout file.
  if (out.layout.job() != path_job) {
    return Invalid("job", absl::StrCat(QuoteForMessage(out.layout.job()),
                                       " does not match the path's job ",
                                       QuoteForMessage(path_job)));
  }
  return out;
}

std::vector<HttpRoute> JobWriteRoutes(const JobWriteSources& sources) {
  HttpRoute route;
  route.path = kPrefix;
  route.methods = {"PUT", "DELETE", "POST"};
  route.max_body_bytes = kMaxJobBodyBytes;
  route.handler = [sources](const HttpRequest& r) {
    return Handle(sources, r);
  };
  return {std::move(route)};
}

}  // namespace fabricdiag::collector
