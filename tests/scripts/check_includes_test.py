#!/usr/bin/env python3
"""scripts/check_includes.py: the repository obeys its include rules, and a
forbidden include in a tree of its own is reported and fails."""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = None


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class CheckIncludesTest(unittest.TestCase):
    def run_script(self, root):
        return subprocess.run(
            [sys.executable,
             os.path.join(SOURCE_DIR, "scripts", "check_includes.py"),
             "--root", root],
            capture_output=True, text=True, timeout=60, check=False)

    def test_the_repository_obeys_every_rule(self):
        r = self.run_script(SOURCE_DIR)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_forbidden_include_fails_naming_file_and_line(self):
        with tempfile.TemporaryDirectory() as root:
            write(root, "client/tls.cc",
                  '#include "client/tls.h"\n#include "common/files.h"\n')
            write(root, "gnmi/bridge_app.cc",
                  '#include "client/tls.h"\n\n#include "cli/cli.h"\n')
            write(root, "analysis/model.cc", "#include <grpcpp/grpcpp.h>\n")
            write(root, "client/bad.h", '#include "agent/stream_client.h"\n')
            # cluster/ may include the collector's seams, not its classes.
            write(root, "cluster/member.h",
                  '#include "collector/findings/findings_replication.h"\n'
                  '#include "collector/findings/findings_store.h"\n')
            r = self.run_script(root)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            lines = sorted(r.stdout.splitlines())
            self.assertEqual(len(lines), 4, r.stdout)
            self.assertTrue(lines[0].startswith(
                'analysis/model.cc:1: include "grpcpp/grpcpp.h"'), lines[0])
            self.assertTrue(lines[1].startswith(
                'client/bad.h:1: include "agent/stream_client.h"'), lines[1])
            self.assertTrue(lines[2].startswith(
                'cluster/member.h:2: include '
                '"collector/findings/findings_store.h"'), lines[2])
            self.assertTrue(lines[3].startswith(
                'gnmi/bridge_app.cc:3: include "cli/cli.h"'), lines[3])

    def test_allowed_includes_pass(self):
        with tempfile.TemporaryDirectory() as root:
            write(root, "gnmi/bridge.cc",
                  '#include "agent/stream_client.h"\n'
                  '#include "client/tls.h"\n')
            write(root, "cluster/jetstream_findings.h",
                  '#include "collector/findings/findings_replication.h"\n'
                  '#include "cluster/nats_connection.h"\n')
            write(root, "tests/client/tls_test.cc",
                  '#include "agent/agent_app.h"\n#include "cli/cli.h"\n')
            r = self.run_script(root)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--source_dir", required=True)
    args, rest = parser.parse_known_args()
    SOURCE_DIR = args.source_dir
    unittest.main(argv=[sys.argv[0]] + rest)
