#!/usr/bin/env python3
"""scripts/clang-tidy-cached.py against a compilation database of its own.

A tiny source tree in a temporary directory, linted with the project's
.clang-tidy and a cache of its own (XDG_CACHE_HOME): a clean file is
remembered, a file with a finding fails every time, and a change to a header
it includes, or a NOLINT taken out, makes it be linted (and fail) again. Bad
arguments end with status 2 and a message.

  clang_tidy_cached_test.py --source_dir=SRC
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

CLEAN_HEADER = "#pragma once\ninline int Answer() { return 42; }\n"
BAD_HEADER = "#pragma once\n#include <cstddef>\ninline int* Null() { return NULL; }\n"


class Tree:
    """A source tree with a compile_commands.json and a cache of its own."""

    def __init__(self, root, script):
        self.root = root
        self.script = script
        # The header sits in a folder .clang-tidy's HeaderFilterRegex names.
        os.makedirs(os.path.join(root, "common"))
        os.makedirs(os.path.join(root, "build"))
        self.write("common/probe.h", CLEAN_HEADER)
        self.write("clean.cc", '#include "common/probe.h"\nint F() { return Answer(); }\n')
        self.write("bad.cc", "#include <cstddef>\nint* G() { return NULL; }\n")
        self.write("nolint.cc",
                   "#include <cstddef>\nint* H() { return NULL; }  // NOLINT\n")
        entries = [{
            "directory": os.path.join(root, "build"),
            # -g as the project builds: its preprocessed text names the
            # working directory too.
            "command": f"c++ -std=c++17 -g -I{root} -o {name}.o -c {root}/{name}",
            "file": f"{root}/{name}",
        } for name in ("clean.cc", "bad.cc", "nolint.cc")]
        self.write("build/compile_commands.json", json.dumps(entries))

    def write(self, name, text):
        with open(os.path.join(self.root, name), "w", encoding="utf-8") as f:
            f.write(text)

    def lint(self, files, build="build"):
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.root, "cache"))
        result = subprocess.run(
            [sys.executable, self.script, "-p", os.path.join(self.root, build),
             "-j", "2", files],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=120, check=False)
        return result.returncode, result.stdout.decode(errors="replace")


def summary(output):
    """(files, unchanged, with findings) from the last line, which must
    count no unit as not cacheable."""
    m = re.search(r"clang-tidy: (\d+) files, (\d+) unchanged since a clean "
                  r"lint, (\d+) with findings, 0 not cacheable", output)
    if not m:
        raise AssertionError(f"no summary line in:\n{output}")
    return tuple(int(g) for g in m.groups())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source_dir", required=True)
    args = parser.parse_args()
    script = os.path.join(args.source_dir, "scripts", "clang-tidy-cached.py")
    failures = []

    def check(what, ok, output=""):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)
            print(output)

    with tempfile.TemporaryDirectory() as root:
        tree = Tree(root, script)

        rc, out = tree.lint(r"/clean\.cc$")
        check("a clean file passes and is linted", rc == 0 and summary(out) == (1, 0, 0), out)
        rc, out = tree.lint(r"/clean\.cc$")
        check("a clean file is remembered", rc == 0 and summary(out) == (1, 1, 0), out)

        tree.write("common/probe.h", BAD_HEADER)
        rc, out = tree.lint(r"/clean\.cc$")
        check("a header's change makes its includer be linted again",
              rc == 1 and summary(out) == (1, 0, 1) and "probe.h" in out, out)
        tree.write("common/probe.h", CLEAN_HEADER)

        for attempt in ("first", "second"):
            rc, out = tree.lint(r"/bad\.cc$")
            check(f"a file with a finding fails ({attempt} run)",
                  rc == 1 and summary(out) == (1, 0, 1)
                  and "modernize-use-nullptr" in out, out)

        rc, out = tree.lint(r"/nolint\.cc$")
        check("a NOLINT holds", rc == 0 and summary(out) == (1, 0, 0), out)
        tree.write("nolint.cc", "#include <cstddef>\nint* H() { return NULL; }\n")
        rc, out = tree.lint(r"/nolint\.cc$")
        check("a NOLINT taken out makes the file be linted again",
              rc == 1 and summary(out) == (1, 0, 1), out)

        rc, out = tree.lint(r"/nothing\.cc$")
        check("a pattern that matches no file is an error",
              rc == 2 and "no file matches" in out, out)
        rc, out = tree.lint(r".", build="missing")
        check("a missing compilation database is an error",
              rc == 2 and "cannot read" in out, out)
        tree.write("build/compile_commands.json", "{not json")
        rc, out = tree.lint(r".")
        check("a damaged compilation database is an error",
              rc == 2 and "cannot read" in out, out)

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
