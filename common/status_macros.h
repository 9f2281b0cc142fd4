// Status propagation macros.
//
// Debian 12 ships Abseil 20220623, which has neither absl/log nor the status
// macros of newer releases, so the project carries its own two:
//
//   absl::Status Load(absl::string_view path) {
//     RETURN_IF_ERROR(CheckPath(path));
//     ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     ...
//   }
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FABRICDIAG_CONCAT_INNER_(a, b) a##b
#define FABRICDIAG_CONCAT_(a, b) FABRICDIAG_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the enclosing
// function when it is not OK.
#define RETURN_IF_ERROR(expr)                                \
  do {                                                       \
    ::absl::Status fabricdiag_status_ = (expr);              \
    if (!fabricdiag_status_.ok()) return fabricdiag_status_; \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status from
// the enclosing function, otherwise moves the value into `lhs`, which may be
// a declaration (`ASSIGN_OR_RETURN(auto x, F())`).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  FABRICDIAG_ASSIGN_OR_RETURN_IMPL_( \
      FABRICDIAG_CONCAT_(fabricdiag_statusor_, __LINE__), lhs, rexpr)

// `statusor` and `lhs` name and declare variables: they cannot be put in
// parentheses.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define FABRICDIAG_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                      \
  if (!statusor.ok()) return std::move(statusor).status();      \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)
