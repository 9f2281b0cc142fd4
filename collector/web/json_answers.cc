#include "collector/web/json_answers.h"

#include <stdexcept>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {
namespace {

using Json = nlohmann::ordered_json;

// Thrown by the parse callback to stop at a nesting too deep; caught below.
struct TooDeep : std::runtime_error {
  TooDeep() : std::runtime_error("too deep") {}
};

}  // namespace

HttpResponse JsonResponse(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  // Names come from agents and layouts: never let a broken UTF-8 sequence
  // turn into an exception on a worker thread.
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  r.body.push_back('\n');
  r.headers.push_back({"Cache-Control", "no-store"});
  return r;
}

int HttpStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 413;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

HttpResponse JsonError(const absl::Status& status) {
  return JsonResponse(HttpStatusOf(status),
                      {{"error", std::string(status.message())}});
}

absl::StatusOr<Json> ParseJsonBody(absl::string_view body,
                                   bool empty_is_object) {
  if (empty_is_object && absl::StripAsciiWhitespace(body).empty()) {
    return Json::object();
  }
  Json j;
  try {
    j = Json::parse(
        body.begin(), body.end(),
        [](int depth, Json::parse_event_t, Json&) {
          if (depth > kMaxJsonBodyDepth) throw TooDeep();
          return true;
        },
        /*allow_exceptions=*/true);
  } catch (const TooDeep&) {
    return absl::InvalidArgumentError(absl::StrCat(
        "body: nested deeper than ", kMaxJsonBodyDepth, " levels"));
  } catch (const Json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 3:
    // ...": the part after the bracket says where and what.
    absl::string_view what = e.what();
    const size_t bracket = what.find("] ");
    if (bracket != absl::string_view::npos) what.remove_prefix(bracket + 2);
    return absl::InvalidArgumentError(
        absl::StrCat("body: not valid JSON: ", what));
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError("body: expected a JSON object");
  }
  return j;
}

}  // namespace fabricdiag::collector
