#!/usr/bin/env python3
"""Runs clang-tidy over the sources of a compilation database, with a cache.

clang-tidy is the slowest step of scripts/test.sh (about 12 minutes on two
cores), and most runs lint files that nothing has changed. Like ccache, this
keys each translation unit on what the compiler would see: its preprocessed
text (every header it includes, system headers too) and, comments included
(NOLINT), the text of every file among them but system headers, its flags, the
clang-tidy version and the .clang-tidy file. A unit whose key passed before is
not linted again; a unit with a finding is never recorded, so it is linted,
and fails, every time until it is fixed. Every unit is linted with this
tree's .clang-tidy (--config-file), wherever the unit lies.

The source root is taken out of the key, so a fresh clone elsewhere on the
same machine reuses the cache. The cache is ~/.cache/fabricdiag/clang-tidy
(XDG_CACHE_HOME is honoured); FABRICDIAG_CLANG_TIDY_CACHE=0 turns it off.

  scripts/clang-tidy-cached.py -p build -j 2 'REGEX'   # REGEX: files to lint

Exit status: 0 when every unit is clean, 1 when any has a finding or clang-tidy
failed (its output is printed), 2 on bad arguments.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

KEY_VERSION = b"fabricdiag-clang-tidy-cache 1\n"
# A line marker of preprocessed text: # LINE "FILE" FLAGS, where flag 3
# marks a system header.
LINE_MARKER = re.compile(rb'^# \d+ "([^"]+)"((?: \d)*)$', re.MULTILINE)


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fabricdiag", "clang-tidy")


def preprocess_command(arguments):
    """The compile command with its output replaced by preprocessing."""
    out = []
    skip_next = False
    for arg in arguments:
        if skip_next:
            skip_next = False
            continue
        if arg == "-o":
            skip_next = True
            continue
        if arg == "-c":
            continue
        out.append(arg)
    return out + ["-E"]


def unit_key(entry, root, common):
    """The cache key of one translation unit, or None if it cannot be made."""
    arguments = entry.get("arguments") or shlex.split(entry["command"])
    result = subprocess.run(preprocess_command(arguments),
                            cwd=entry["directory"],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL,
                            check=False)
    if result.returncode != 0:
        return None
    digest = hashlib.sha256(common)
    root_bytes = root.encode()
    for part in (" ".join(arguments).encode(), entry["file"].encode(),
                 result.stdout):
        digest.update(part.replace(root_bytes, b"<root>"))
        digest.update(b"\0")
    # Preprocessing drops comments, and a NOLINT is one: the files the unit
    # includes that are not system headers count as written. (Keeping
    # comments, -C, makes preprocessing ten times slower.)
    # Markers name <built-in> and, with -g, the working directory too.
    included = {
        path for path, flags in LINE_MARKER.findall(result.stdout)
        if not path.startswith(b"<") and not path.endswith(b"/") and
        b"3" not in flags.split()
    }
    for path in sorted(included):
        try:
            with open(path, "rb") as f:
                digest.update(path.replace(root_bytes, b"<root>") + b"\0")
                digest.update(f.read())
        except OSError:
            return None
    return digest.hexdigest()


def lint(entry, build_dir, config, common, cache):
    """Lints one unit; returns (file, passed, output, from_cache, keyed)."""
    root = os.path.dirname(config)
    key = unit_key(entry, root, common) if cache else None
    marker = os.path.join(cache, key[:2], key) if key else None
    if marker and os.path.exists(marker):
        return entry["file"], True, "", True, True
    result = subprocess.run(
        [
            "clang-tidy", "-p", build_dir, f"--config-file={config}",
            "--quiet", entry["file"]
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False)
    output = result.stdout.decode(errors="replace")
    passed = result.returncode == 0 and not re.search(
        r"\b(warning|error):", output)
    if passed and marker:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        with open(marker + ".tmp", "w", encoding="utf-8") as f:
            f.write(entry["file"] + "\n")
        os.replace(marker + ".tmp", marker)
    return entry["file"], passed, output, False, key is not None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-p", dest="build_dir", required=True,
                        help="build directory holding compile_commands.json")
    parser.add_argument("-j", dest="jobs", type=int, default=os.cpu_count(),
                        help="units linted at once (default: every core)")
    parser.add_argument("files", help="regular expression: the files to lint")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("-j must be at least 1")

    build_dir = os.path.abspath(args.build_dir)
    database = os.path.join(build_dir, "compile_commands.json")
    try:
        with open(database, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        print(f"clang-tidy-cached: cannot read {database}: {e}",
              file=sys.stderr)
        return 2
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and "file" in e and "directory" in e and
            ("command" in e or "arguments" in e) for e in entries):
        print(f"clang-tidy-cached: {database} is not a compilation database",
              file=sys.stderr)
        return 2
    try:
        pattern = re.compile(args.files)
    except re.error as e:
        print(f"clang-tidy-cached: bad pattern {args.files!r}: {e}",
              file=sys.stderr)
        return 2
    units = {}
    for entry in entries:
        if pattern.search(entry["file"]):
            units.setdefault(entry["file"], entry)
    if not units:
        print(f"clang-tidy-cached: no file matches {args.files!r}",
              file=sys.stderr)
        return 2

    # This tree's checks, for every file linted (and in the key).
    config = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        ".clang-tidy")
    common = KEY_VERSION
    common += subprocess.run(["clang-tidy", "--version"],
                             stdout=subprocess.PIPE,
                             check=True).stdout
    with open(config, "rb") as f:
        common += f.read()
    cache = None
    if os.environ.get("FABRICDIAG_CLANG_TIDY_CACHE", "1") != "0":
        cache = cache_dir()

    start = time.monotonic()
    failed = []
    cached = 0
    unkeyed = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [
            pool.submit(lint, entry, build_dir, config, common, cache)
            for entry in units.values()
        ]
        for future in concurrent.futures.as_completed(futures):
            file, passed, output, from_cache, keyed = future.result()
            cached += from_cache
            unkeyed += cache is not None and not keyed
            if not passed:
                failed.append(file)
                print(f"== {file}\n{output}", flush=True)
    print(f"clang-tidy: {len(units)} files, {cached} unchanged since a clean "
          f"lint, {len(failed)} with findings, {unkeyed} not cacheable "
          f"(preprocessing failed) ({time.monotonic() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
