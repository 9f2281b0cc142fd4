#include "gnmi/gnmi_path.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace fabricdiag::gnmi {
namespace {

void AppendEscaped(absl::string_view value, std::string* out) {
  for (char c : value) {
    if (c == ']' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
}

void AppendElem(const ElemView& e, bool strip_module, std::string* out) {
  out->push_back('/');
  absl::StrAppend(out, strip_module ? ElemName(e.name) : e.name);
  for (const auto& [k, v] : e.keys) {
    absl::StrAppend(out, "[", k, "=");
    AppendEscaped(v, out);
    out->push_back(']');
  }
}

ElemView ViewOf(const ::gnmi::PathElem& e) {
  ElemView v;
  v.name = e.name();
  v.keys.reserve(e.key().size());
  for (const auto& [k, value] : e.key()) v.keys.emplace_back(k, value);
  std::sort(v.keys.begin(), v.keys.end());
  return v;
}

}  // namespace

absl::string_view ElemView::Key(absl::string_view key) const {
  for (const auto& [k, v] : keys) {
    if (k == key) return v;
  }
  return {};
}

absl::string_view ElemName(absl::string_view name) {
  const size_t colon = name.find(':');
  return colon == absl::string_view::npos ? name : name.substr(colon + 1);
}

void PathView::Append(const ::gnmi::Path& path) {
  for (const ::gnmi::PathElem& e : path.elem()) elems_.push_back(ViewOf(e));
}

std::string PathView::ToString() const {
  if (elems_.empty()) return "/";
  std::string out;
  for (const ElemView& e : elems_) AppendElem(e, false, &out);
  return out;
}

void AppendElems(const PathView& path, size_t from, std::string* out) {
  for (size_t i = from; i < path.size(); ++i) AppendElem(path[i], true, out);
}

absl::StatusOr<::gnmi::Path> ParsePath(absl::string_view text) {
  ::gnmi::Path path;
  const size_t first_slash = text.find('/');
  if (first_slash == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("path \"", text, "\" does not start with '/'"));
  }
  if (first_slash > 0) {
    absl::string_view origin = text.substr(0, first_slash);
    if (origin.back() != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat("path \"", text, "\" does not start with '/'"));
    }
    origin.remove_suffix(1);
    path.set_origin(std::string(origin));
    text.remove_prefix(first_slash);
  }
  size_t i = 1;  // past the leading '/'
  if (text.size() == 1) return path;
  while (i <= text.size()) {
    ::gnmi::PathElem* elem = path.add_elem();
    std::string name;
    while (i < text.size() && text[i] != '/' && text[i] != '[') {
      name.push_back(text[i++]);
    }
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("path \"", text, "\" has an empty element"));
    }
    elem->set_name(name);
    while (i < text.size() && text[i] == '[') {
      ++i;
      std::string key;
      while (i < text.size() && text[i] != '=' && text[i] != ']') {
        key.push_back(text[i++]);
      }
      if (i >= text.size() || text[i] != '=' || key.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("path \"", text, "\": key without '=' in ", name));
      }
      ++i;
      std::string value;
      bool closed = false;
      while (i < text.size()) {
        const char c = text[i++];
        if (c == '\\' && i < text.size()) {
          value.push_back(text[i++]);
        } else if (c == ']') {
          closed = true;
          break;
        } else {
          value.push_back(c);
        }
      }
      if (!closed) {
        return absl::InvalidArgumentError(
            absl::StrCat("path \"", text, "\": unterminated key of ", name));
      }
      (*elem->mutable_key())[key] = value;
    }
    if (i < text.size() && text[i] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("path \"", text, "\": text after a key of ", name));
    }
    ++i;  // the '/' (or past the end)
    if (i == text.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("path \"", text, "\" ends with '/'"));
    }
  }
  return path;
}

std::string PathToString(const ::gnmi::Path& path) {
  PathView v;
  v.Append(path);
  std::string text = v.ToString();
  return path.origin().empty() ? text : absl::StrCat(path.origin(), ":", text);
}

}  // namespace fabricdiag::gnmi
