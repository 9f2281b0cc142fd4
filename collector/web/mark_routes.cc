#include "collector/web/mark_routes.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "collector/findings/finding_json.h"
#include "collector/findings/silence_matchers.h"
#include "collector/web/json_answers.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kSilences[] = "/api/v1/silences";
constexpr char kSilencePrefix[] = "/api/v1/silences/";
constexpr char kFindingPrefix[] = "/api/v1/findings/";
constexpr char kAck[] = "/ack";
constexpr int kApiVersion = 1;

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// The optional string `key` of `body`; "" when absent.
absl::StatusOr<std::string> StringField(const Json& body,
                                        absl::string_view key) {
  auto it = body.find(std::string(key));
  if (it == body.end()) return std::string();
  if (!it->is_string()) {
    return Invalid(key, absl::StrCat("expected a string, not ", it->dump()));
  }
  return it->get<std::string>();
}

// Only the fields a route knows: a misspelt one is an error, not ignored.
absl::Status OnlyFields(const Json& body,
                        std::initializer_list<absl::string_view> known) {
  for (const auto& [key, value] : body.items()) {
    bool ok = false;
    for (absl::string_view k : known) ok = ok || key == k;
    if (!ok) {
      std::string list;
      for (absl::string_view k : known) {
        absl::StrAppend(&list, list.empty() ? "" : ", ", k);
      }
      return Invalid(QuoteForMessage(key),
                     absl::StrCat("unknown field (known: ", list, ")"));
    }
  }
  return absl::OkStatus();
}

// Who writes the mark: the token's name, else (no token file) what the
// body says, else "unknown".
std::string Who(const MarkSources& s, const HttpRequest& r,
                const std::string& sent) {
  if (!s.access->open()) {
    absl::StatusOr<std::string> name =
        s.access->Authorize(r.authorization, Scope::kAdmin);
    if (name.ok() && !name->empty()) return *name;
  }
  return sent.empty() ? "unknown" : sent;
}

// The matchers' checks say "--matcher" (the CLI's flag); the body's field
// is "matchers".
absl::Status AsBodyField(const absl::Status& status) {
  absl::string_view message = status.message();
  if (!absl::ConsumePrefix(&message, "--matcher: ")) return status;
  return absl::Status(status.code(), absl::StrCat("matchers: ", message));
}

absl::StatusOr<v1::CreateSilenceRequest> ParseSilence(absl::string_view body) {
  ASSIGN_OR_RETURN(Json j, ParseJsonBody(body, /*empty_is_object=*/false));
  RETURN_IF_ERROR(OnlyFields(j, {"matchers", "for", "comment", "who"}));
  v1::CreateSilenceRequest request;
  auto matchers = j.find("matchers");
  if (matchers == j.end() || !matchers->is_object()) {
    return Invalid("matchers",
                   "expected an object of KEY: VALUE, e.g. {\"kind\": "
                   "\"pfc_storm\", \"node\": \"leaf-3\"}");
  }
  for (const auto& [key, value] : matchers->items()) {
    if (!value.is_string()) {
      return Invalid(absl::StrCat("matchers.", key),
                     absl::StrCat("expected a string, not ", value.dump()));
    }
    v1::SilenceMatcher* m = request.add_matchers();
    m->set_key(key);
    m->set_value(value.get<std::string>());
  }
  RETURN_IF_ERROR(AsBodyField(CheckMatchers(request.matchers())));
  auto duration = j.find("for");
  if (duration == j.end() || !duration->is_string()) {
    return Invalid("for", "expected a duration such as \"4h\" or \"7d\"");
  }
  ASSIGN_OR_RETURN(absl::Duration d,
                   ParseSilenceDuration(duration->get<std::string>(), "for"));
  request.set_duration_seconds(absl::ToInt64Seconds(d));
  ASSIGN_OR_RETURN(std::string comment, StringField(j, "comment"));
  if (absl::StripAsciiWhitespace(comment).empty()) {
    return Invalid("comment", "required (say why, e.g. a ticket)");
  }
  request.set_comment(std::move(comment));
  ASSIGN_OR_RETURN(std::string who, StringField(j, "who"));
  request.set_who(std::move(who));
  return request;
}

HttpResponse ListSilences(const MarkSources& s) {
  Json j;
  j["api_version"] = kApiVersion;
  j["silences"] = Json::array();
  for (const v1::Silence& silence : s.marks->ListSilences()) {
    j["silences"].push_back(SilenceToJson(silence));
  }
  return JsonResponse(200, j);
}

HttpResponse CreateSilence(const MarkSources& s, const HttpRequest& r) {
  absl::StatusOr<v1::CreateSilenceRequest> request = ParseSilence(r.body);
  if (!request.ok()) return JsonError(request.status());
  absl::StatusOr<v1::Silence> silence =
      s.marks->CreateSilence(*request, Who(s, r, request->who()));
  if (!silence.ok()) return JsonError(AsBodyField(silence.status()));
  return JsonResponse(201, SilenceToJson(*silence));
}

HttpResponse ExpireSilence(const MarkSources& s, const HttpRequest& r) {
  absl::string_view id = r.path;
  absl::ConsumePrefix(&id, kSilencePrefix);
  if (id.empty() || absl::StrContains(id, '/')) {
    return JsonError(absl::NotFoundError(
        absl::StrCat("no such route: ", QuoteForMessage(r.path),
                     " (DELETE /api/v1/silences/ID)")));
  }
  absl::StatusOr<v1::Silence> silence =
      s.marks->ExpireSilence(id, Who(s, r, ""));
  if (!silence.ok()) return JsonError(silence.status());
  return JsonResponse(200, SilenceToJson(*silence));
}

HttpResponse Ack(const MarkSources& s, const HttpRequest& r) {
  absl::string_view id = r.path;
  absl::ConsumePrefix(&id, kFindingPrefix);
  if (!absl::ConsumeSuffix(&id, kAck) || id.empty() ||
      absl::StrContains(id, '/')) {
    return JsonError(absl::NotFoundError(
        absl::StrCat("no such route: ", QuoteForMessage(r.path),
                     " (POST /api/v1/findings/ID/ack)")));
  }
  absl::StatusOr<Json> body = ParseJsonBody(r.body, /*empty_is_object=*/true);
  if (!body.ok()) return JsonError(body.status());
  if (absl::Status known = OnlyFields(*body, {"comment", "who"}); !known.ok()) {
    return JsonError(known);
  }
  absl::StatusOr<std::string> comment = StringField(*body, "comment");
  if (!comment.ok()) return JsonError(comment.status());
  absl::StatusOr<std::string> who = StringField(*body, "who");
  if (!who.ok()) return JsonError(who.status());
  for (v1::Finding& f : s.findings->Active()) {
    if (f.id() != id) continue;
    absl::StatusOr<v1::FindingAck> ack =
        s.marks->Ack(f, *comment, Who(s, r, *who));
    if (!ack.ok()) return JsonError(ack.status());
    s.marks->Mark(&f);
    return JsonResponse(200, FindingToJson(f));
  }
  return JsonError(absl::NotFoundError(
      absl::StrCat("no active finding ", QuoteForMessage(id),
                   " (an ack applies to an active finding until it "
                   "resolves)")));
}

}  // namespace

std::vector<HttpRoute> MarkRoutes(const MarkSources& sources) {
  std::vector<HttpRoute> routes;
  routes.push_back({kSilences, [sources](const HttpRequest&) {
                      return ListSilences(sources);
                    }});
  HttpRoute create{kSilences, [sources](const HttpRequest& r) {
                     return CreateSilence(sources, r);
                   }};
  create.methods = {"POST"};
  create.max_body_bytes = kMaxMarkBodyBytes;
  routes.push_back(std::move(create));
  HttpRoute expire{kSilencePrefix, [sources](const HttpRequest& r) {
                     return ExpireSilence(sources, r);
                   }};
  expire.methods = {"DELETE"};
  routes.push_back(std::move(expire));
  HttpRoute ack{kFindingPrefix,
                [sources](const HttpRequest& r) { return Ack(sources, r); }};
  ack.methods = {"POST"};
  ack.max_body_bytes = kMaxMarkBodyBytes;
  routes.push_back(std::move(ack));
  return routes;
}

}  // namespace fabricdiag::collector
