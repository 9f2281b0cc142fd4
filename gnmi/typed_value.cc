#include "gnmi/typed_value.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "nlohmann/json.hpp"

namespace fabricdiag::gnmi {
namespace {

using Json = nlohmann::json;

// The key leaves of the YANG lists the bridge reads, by list name
// (openconfig-interfaces, openconfig-qos-interfaces, arista-intf-augments).
struct ListKeys {
  absl::string_view list;
  std::vector<absl::string_view> keys;
};
const std::vector<ListKeys>& KnownLists() {
  static const auto* const kLists = new std::vector<ListKeys>{
      {"interface", {"name"}},
      {"subinterface", {"index"}},
      {"queue", {"name"}},
      {"priority", {"index"}},
      {"switch-priority", {"priority"}},
      {"tx-queue", {"index", "queue-type"}},
  };
  return *kLists;
}

// Depth of {} and [] nesting, outside strings; false when deeper than
// `limit` (checked before parsing, so that a hostile document never reaches
// a recursive walk).
bool DepthWithin(absl::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

class JsonWalker {
 public:
  JsonWalker(PathView* path, const LeafFn& leaf) : path_(path), leaf_(leaf) {}

  void Walk(const Json& j) {
    switch (j.type()) {
      case Json::value_t::object:
        for (const auto& [name, member] : j.items()) {
          path_->Push(ElemView{name, {}});
          WalkMember(name, member);
          path_->Pop();
        }
        return;
      case Json::value_t::array:  // a leaf-list, or a list without a name
      case Json::value_t::null:
      case Json::value_t::discarded:
        return;
      default:
        EmitScalar(j);
        return;
    }
  }

 private:
  // `member` of an object, whose name is on the path already.
  void WalkMember(absl::string_view name, const Json& member) {
    if (!member.is_array()) {
      Walk(member);
      return;
    }
    // A YANG list: one path element per entry, keyed. The element pushed
    // for the member is replaced by the keyed one.
    const std::vector<absl::string_view> keys = KeysOf(ElemName(name), member);
    if (keys.empty()) return;  // a leaf-list, or entries without keys
    for (const Json& entry : member) {
      if (!entry.is_object()) continue;
      ElemView elem{name, {}};
      bool complete = true;
      for (absl::string_view k : keys) {
        auto it = FindMember(entry, k);
        if (it == entry.end() || it->is_object() || it->is_array()) {
          complete = false;
          break;
        }
        elem.keys.emplace_back(k, Stringify(*it));
      }
      if (!complete) continue;
      std::sort(elem.keys.begin(), elem.keys.end());
      path_->Pop();
      path_->Push(std::move(elem));
      for (const auto& [child, value] : entry.items()) {
        // The key leaves are in the element already.
        if (IsKey(ElemName(child), keys)) continue;
        path_->Push(ElemView{child, {}});
        WalkMember(child, value);
        path_->Pop();
      }
    }
  }

  static Json::const_iterator FindMember(const Json& entry,
                                         absl::string_view key) {
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      if (ElemName(it.key()) == key) return it;
    }
    return entry.end();
  }

  static bool IsKey(absl::string_view name,
                    const std::vector<absl::string_view>& keys) {
    for (absl::string_view k : keys) {
      if (k == name) return true;
    }
    return false;
  }

  // The keys of list `name`: known ones, else the first of name/index/id
  // that every entry has.
  static std::vector<absl::string_view> KeysOf(absl::string_view name,
                                               const Json& entries) {
    for (const ListKeys& l : KnownLists()) {
      if (l.list == name) return l.keys;
    }
    for (absl::string_view guess : {"name", "index", "id"}) {
      bool all = !entries.empty();
      for (const Json& e : entries) {
        all = all && e.is_object() && FindMember(e, guess) != e.end();
      }
      if (all) return {guess};
    }
    return {};
  }

  // A key value as text; numbers are formatted into storage that outlives
  // the walk of the entry.
  absl::string_view Stringify(const Json& j) {
    if (j.is_string()) return j.get_ref<const std::string&>();
    scratch_.push_back(j.dump());
    return scratch_.back();
  }

  void EmitScalar(const Json& j) {
    Scalar s;
    switch (j.type()) {
      case Json::value_t::string:
        s = ScalarFromString(j.get_ref<const std::string&>());
        break;
      case Json::value_t::number_unsigned:
        s.type = Scalar::Type::kUnsigned;
        s.number = j.get<uint64_t>();
        break;
      case Json::value_t::number_integer: {
        const int64_t v = j.get<int64_t>();
        if (v >= 0) {
          s.type = Scalar::Type::kUnsigned;
          s.number = static_cast<uint64_t>(v);
        } else {
          s.type = Scalar::Type::kNegative;
        }
        break;
      }
      case Json::value_t::number_float:
        s.type = Scalar::Type::kFloat;
        break;
      case Json::value_t::boolean:
        s.type = Scalar::Type::kBool;
        break;
      default:
        return;
    }
    leaf_(*path_, s);
  }

  PathView* path_;
  const LeafFn& leaf_;
  std::deque<std::string> scratch_;
};

DecodeStatus DecodeJson(const std::string& text, PathView* path,
                        const LeafFn& leaf) {
  if (!DepthWithin(text, kMaxJsonDepth)) return DecodeStatus::kTooDeep;
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return DecodeStatus::kBadJson;
  const size_t depth = path->size();
  JsonWalker(path, leaf).Walk(j);
  path->Truncate(depth);
  return DecodeStatus::kOk;
}

}  // namespace

const char* DecodeStatusName(DecodeStatus status) {
  switch (status) {
    case DecodeStatus::kOk:
      return "ok";
    case DecodeStatus::kEmptyValue:
      return "empty_value";
    case DecodeStatus::kUnsupportedType:
      return "unsupported_type";
    case DecodeStatus::kBadJson:
      return "bad_json";
    case DecodeStatus::kTooDeep:
      return "too_deep";
  }
  return "unknown";
}

Scalar ScalarFromString(absl::string_view s) {
  Scalar out;
  out.text = s;
  if (s.empty() || s.size() > 64) return out;
  for (char c : s) {
    if (c < '0' || c > '9') return out;
  }
  if (!absl::SimpleAtoi(s, &out.number)) {
    out.type = Scalar::Type::kOutOfRange;
    return out;
  }
  out.type = Scalar::Type::kUnsigned;
  return out;
}

DecodeStatus DecodeValue(const ::gnmi::TypedValue& value, PathView* path,
                         const LeafFn& leaf) {
  Scalar s;
  switch (value.value_case()) {
    case ::gnmi::TypedValue::kUintVal:
      s.type = Scalar::Type::kUnsigned;
      s.number = value.uint_val();
      break;
    case ::gnmi::TypedValue::kIntVal:
      if (value.int_val() >= 0) {
        s.type = Scalar::Type::kUnsigned;
        s.number = static_cast<uint64_t>(value.int_val());
      } else {
        s.type = Scalar::Type::kNegative;
      }
      break;
    case ::gnmi::TypedValue::kStringVal:
      s = ScalarFromString(value.string_val());
      break;
    case ::gnmi::TypedValue::kBoolVal:
      s.type = Scalar::Type::kBool;
      break;
    case ::gnmi::TypedValue::kDoubleVal:
    case ::gnmi::TypedValue::kFloatVal:
    case ::gnmi::TypedValue::kDecimalVal:
      s.type = Scalar::Type::kFloat;
      break;
    case ::gnmi::TypedValue::kJsonIetfVal:
      return DecodeJson(value.json_ietf_val(), path, leaf);
    case ::gnmi::TypedValue::kJsonVal:
      return DecodeJson(value.json_val(), path, leaf);
    case ::gnmi::TypedValue::kAsciiVal:
    case ::gnmi::TypedValue::kBytesVal:
    case ::gnmi::TypedValue::kProtoBytes:
    case ::gnmi::TypedValue::kAnyVal:
    case ::gnmi::TypedValue::kLeaflistVal:
      return DecodeStatus::kUnsupportedType;
    case ::gnmi::TypedValue::VALUE_NOT_SET:
      return DecodeStatus::kEmptyValue;
  }
  leaf(*path, s);
  return DecodeStatus::kOk;
}

}  // namespace fabricdiag::gnmi
