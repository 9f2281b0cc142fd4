// The live page's files (collector/web/), compiled into the collector so
// that it serves its page with no CDN, no network and nothing installed
// beside the binary. The definition is generated at build time from the
// files themselves (collector/web/embed.cmake).
//
//   for (const WebAsset& a : WebAssets()) routes.push_back({a.path, ...});
#pragma once

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace fabricdiag::collector {

struct WebAsset {
  const char* path;          // "/", "/app.js"
  const char* content_type;  // "text/html; charset=utf-8"
  absl::string_view body;
};

absl::Span<const WebAsset> WebAssets();

}  // namespace fabricdiag::collector
