#!/usr/bin/env python3
"""Fails when a file includes from a folder it must not.

The rules are the table RULES below: each names the folders it applies to
(paths from the repository root; a file matches when its path starts with
one) and the include prefixes they must not use ("agent/" for our headers,
"grpcpp/" for a library). ONLY_RULES name, for some folders and a prefix,
the only headers under that prefix they may include. Both quoted and
angled includes are checked.

    scripts/check_includes.py [--root DIR]

Prints one line per forbidden include (file:line: include "x" -- reason) and
exits 1 when there is any, 0 otherwise.
"""

import argparse
import os
import re
import sys

# (folders, forbidden include prefixes, why). Keep it to rules that hold.
PRODUCT = ["agent/", "analysis/", "cli/", "client/", "collector/", "cluster/",
           "common/", "counters/", "gnmi/", "proto/", "server/"]
# collector/'s folders from the bottom up: each includes only those before it
# (collector/CMakeLists.txt says what each owns).
COLLECTOR_LAYERS = ["access", "store", "state", "declared", "topology",
                    "findings", "ingest", "runner", "api", "web"]


def collector_layer_rules():
    rules = []
    for i, layer in enumerate(COLLECTOR_LAYERS):
        above = ["collector/%s/" % l for l in COLLECTOR_LAYERS[i + 1:]]
        if above:
            rules.append((["collector/%s/" % layer], above,
                          "collector/%s/ sits below %s" %
                          (layer, ", ".join(a[:-1] for a in above))))
    return rules


RULES = collector_layer_rules() + [
    (["collector/web/"], ["collector/api/", "collector/runner/",
                          "collector/ingest/"],
     "the web pages read declared state and findings, not the pass"),
    (["collector/"], ["cluster/", "server/"],
     "collector/ declares the seams; cluster/ implements them and server/ "
     "wires both"),
    (["cluster/"], ["server/"], "server/ is the top: nothing includes it"),
    ([p for p in PRODUCT if p != "server/"], ["server/"],
     "server/ is the top: nothing includes it"),
    (["client/"],
     ["agent/", "analysis/", "cli/", "cluster/", "collector/", "gnmi/",
      "sim/"],
     "client/ may include common/, proto/ and gRPC only"),
    (["gnmi/"], ["cli/"],
     "gnmi/ reaches the collector through client/, not the CLI"),
    (["analysis/"],
     ["grpcpp/", "grpc/", "agent/", "cli/", "client/", "cluster/",
      "collector/", "gnmi/", "sim/", "proto/ingest.grpc.pb.h"],
     "analysis/ is pure: no gRPC, no processes around it (it reads the "
     "ingest messages of fabricdiag_ingest_proto, not the service)"),
    (["common/"],
     ["agent/", "analysis/", "cli/", "client/", "cluster/", "collector/",
      "counters/", "gnmi/", "sim/"],
     "common/ is below every other folder"),
    (["agent/"], ["cli/", "cluster/", "collector/", "gnmi/", "sim/"],
     "the agent depends on no server or sibling binary"),
    (["cli/"], ["agent/", "cluster/", "gnmi/", "sim/"],
     "the CLI talks to the collector through client/"),
    (PRODUCT, ["sim/", "bench/", "tests/"],
     "the product never depends on the simulator, benchmarks or tests"),
]

# (folders, prefix, the only headers under it they may include, why).
ONLY_RULES = [
    (["cluster/"], "collector/",
     ["collector/declared/declared_state.h",
      "collector/declared/node_facts.h",
      "collector/declared/node_facts_cache.h",
      "collector/declared/write_deadline.h",
      "collector/findings/findings_replication.h",
      "collector/findings/findings_staleness.h",
      "collector/findings/mark_state.h",
      "collector/ingest/ingest_placement.h",
      "collector/runner/analysis_role.h",
      "collector/runner/analysis_shards.h",
      "collector/runner/feature_exchange.h",
      "collector/state/baselines_store.h",
      "collector/state/object_store.h"],
     "cluster/ implements the collector's seams and knows no concrete "
     "collector class"),
]

SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
SKIP_DIRS = {".git", "build"}


def sources(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, root).replace(os.sep, "/")


def violations(root, rules=None, only_rules=None):
    rules = RULES if rules is None else rules
    only_rules = ONLY_RULES if only_rules is None else only_rules
    out = []
    for rel in sources(root):
        applicable = [(bad, why) for folders, bad, why in rules
                      if any(rel.startswith(f) for f in folders)]
        only = [(prefix, allowed, why)
                for folders, prefix, allowed, why in only_rules
                if any(rel.startswith(f) for f in folders)]
        if not applicable and not only:
            continue
        with open(os.path.join(root, rel), encoding="utf-8",
                  errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                for bad, why in applicable:
                    if any(target.startswith(b) for b in bad):
                        out.append('%s:%d: include "%s" -- %s' %
                                   (rel, number, target, why))
                for prefix, allowed, why in only:
                    if target.startswith(prefix) and target not in allowed:
                        out.append('%s:%d: include "%s" -- %s' %
                                   (rel, number, target, why))
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args(argv)
    found = violations(args.root)
    for line in found:
        print(line)
    if found:
        print("%d forbidden include(s)" % len(found), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
