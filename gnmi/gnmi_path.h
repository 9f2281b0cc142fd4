// gNMI paths as the bridge handles them: a view of the elements of a
// notification's prefix, an update's path and the members of a JSON value
// below it, as one absolute path, without copying a name.
//
// The text form is that of openconfig/reference rpc/gnmi/
// gnmi-path-conventions.md: "/interfaces/interface[name=Ethernet1]/state",
// keys in brackets, `]` and `\` in a key value escaped with `\`. Element
// names may carry a YANG module prefix ("openconfig-interfaces:counters",
// RFC 7951 member names); ElemName() drops it.
//
//   ASSIGN_OR_RETURN(::gnmi::Path p,
//                    ParsePath("/interfaces/interface[name=Ethernet1]"));
//   PathView v;
//   v.Append(p);
//   v.ToString();  // "/interfaces/interface[name=Ethernet1]"
//
// Pure; thread-compatible.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/gnmi.pb.h"

namespace fabricdiag::gnmi {

// One path element: a name and its list keys, sorted by key name (a
// PathElem's key map has no order of its own).
struct ElemView {
  absl::string_view name;
  // Inline: list elements have one or two keys, and a path is built for
  // every leaf a switch sends.
  absl::InlinedVector<std::pair<absl::string_view, absl::string_view>, 2> keys;

  // The value of key `key`; empty when absent.
  absl::string_view Key(absl::string_view key) const;
};

// The name without a module prefix: "openconfig-interfaces:counters" ->
// "counters".
absl::string_view ElemName(absl::string_view name);

// An absolute path under construction. Views point into the messages and
// JSON documents being walked, which must outlive it.
class PathView {
 public:
  // Appends the elements of `path`. (The string `element` of targets
  // before gNMI 0.4 is not read: every target since 2017 sends `elem`.)
  void Append(const ::gnmi::Path& path);
  void Push(ElemView elem) { elems_.push_back(std::move(elem)); }
  void Pop() { elems_.pop_back(); }
  void Truncate(size_t size) { elems_.resize(size); }

  size_t size() const { return elems_.size(); }
  bool empty() const { return elems_.empty(); }
  const ElemView& operator[](size_t i) const { return elems_[i]; }

  // "/a/b[k=v]/c", module prefixes kept, keys sorted.
  std::string ToString() const;

 private:
  std::vector<ElemView> elems_;
};

// Appends "/name[k=v]..." for elements [from, path.size()) of `path`, module
// prefixes dropped, key values escaped.
void AppendElems(const PathView& path, size_t from, std::string* out);

// Parses the text form. InvalidArgument for a relative path, an empty
// element, an unterminated key or a key without '='. "/" is the root (no
// elements). An "origin:" before the first '/' ("openconfig:/interfaces")
// sets Path.origin.
absl::StatusOr<::gnmi::Path> ParsePath(absl::string_view text);

// The text form of a Path message.
std::string PathToString(const ::gnmi::Path& path);

}  // namespace fabricdiag::gnmi
