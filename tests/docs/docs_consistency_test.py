#!/usr/bin/env python3
"""Fails when the user documentation in docs/ and the code drift apart.

Checks, each naming the file and the missing name:
  - every ABSL_FLAG of a binary appears as --NAME in that binary's page
    (agent/*.cc -> docs/agent.md, server/*.cc -> docs/collector.md,
    cli/*.cc -> docs/cli.md, sim/*.cc -> docs/simulator.md,
    gnmi/*.cc -> docs/gnmi-bridge.md);
  - every metric family name ("fabricdiag_...") in agent/*.cc,
    collector/**.cc, cluster/*.cc, gnmi/*.cc, server/*.cc and
    counters/meanings.cc (the meanings' families) appears in docs/metrics.md;
  - every finding kind of analysis/finding.h kKnownFindingKinds has a
    "## <kind>" section in docs/findings.md (its runbook anchor), and every
    such section names a known kind;
  - every setting parsed by analysis/analysis_config.cc (section.key) appears
    in docs/findings.md;
  - docs/counters.md keeps its generated-table markers;
  - relative links in docs/*.md and README.md resolve, anchors included;
  - docs/ cites nothing outside the repository.

Standard library only. Usage:
  docs_consistency_test.py [--source_dir=DIR] [unittest options]
DIR defaults to the repository holding this file.
"""

import os
import re
import sys
import unittest

SOURCE_DIR = os.path.abspath(
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))

# Which page documents the flags defined in which directory (non-recursive:
# a subfolder may define another binary's flags).
FLAG_PAGES = [
    ("agent", "docs/agent.md"),
    ("server", "docs/collector.md"),
    ("cli", "docs/cli.md"),
    ("sim", "docs/simulator.md"),
    ("gnmi", "docs/gnmi-bridge.md"),
]
# Where each binary's main() lives: it must define at least one flag, so a
# broken parser cannot pass by finding nothing.
MAIN_FILES = {
    "agent": "agent/agent_main.cc",
    "server": "server/collector_main.cc",
    "cli": "cli/main.cc",
    "sim": "sim/sim_main.cc",
    "gnmi": "gnmi/bridge_main.cc",
}
# The shared flag blocks each binary links (client/*_flags.cc): their flags
# are that binary's too.
FLAG_BLOCKS = {
    "agent": ["client/stream_flags.cc", "client/tls_flags.cc"],
    "cli": ["client/tls_flags.cc"],
    "gnmi": ["client/stream_flags.cc", "client/tls_flags.cc"],
}

# ABSL_FLAG(type, name, default, help); the type may hold "::" and "<...>".
FLAG_RE = re.compile(r"\bABSL_FLAG\(\s*[^,]+?\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
# A complete metric family name as a C++ string literal. Literals ending in
# "_" are prefixes glued to something else and are not names.
METRIC_RE = re.compile(r'"(fabricdiag_[A-Za-z0-9_]*[A-Za-z0-9])"')
KINDS_RE = re.compile(r"kKnownFindingKinds\[\]\s*=\s*\{(.*?)\};", re.S)
STRING_RE = re.compile(r'"([^"\\]*)"')
# In analysis_config.cc Sections(): a section is {"name", {...fields...}},
# a field is {"key", &c->section.member, ...} or {"key", nullptr, &c->...}.
CONFIG_TOKEN_RE = re.compile(
    r'\{"(?P<section>[a-z_]*)",\s*\{'
    r'|\{"(?P<field>[a-z_]+)",\s*(?:nullptr,\s*)?&c->(?P<path>[a-z_.]+)')
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
OUTSIDE_RE = re.compile(r"INTERFACES\.md|COUNTERS\.md|\.\./shared|/work/shared")


def read(rel, source_dir=None):
    with open(os.path.join(source_dir or SOURCE_DIR, rel),
              encoding="utf-8") as f:
        return f.read()


def strip_comments(cpp):
    """C++ text without // and /* */ comments (string literals kept)."""
    out = []
    i = 0
    n = len(cpp)
    while i < n:
        c = cpp[i]
        if c == "'" and 0 < i < n - 1 and cpp[i - 1].isalnum() and \
                cpp[i + 1].isalnum():
            out.append(c)  # a digit separator: 30'000'000
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and cpp[j] != c:
                j += 2 if cpp[j] == "\\" else 1
            out.append(cpp[i:j + 1])
            i = j + 1
        elif cpp.startswith("//", i):
            j = cpp.find("\n", i)
            i = n if j < 0 else j
        elif cpp.startswith("/*", i):
            j = cpp.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def flag_names(cpp):
    return FLAG_RE.findall(strip_comments(cpp))


def metric_names(cpp):
    return METRIC_RE.findall(strip_comments(cpp))


def finding_kinds(header):
    match = KINDS_RE.search(strip_comments(header))
    if match is None:
        return []
    return STRING_RE.findall(match.group(1))


def config_keys(cpp):
    """Dotted keys ("pfc_storm.warning_pause_fraction", "window_seconds")."""
    body = strip_comments(cpp)
    start = body.find("Sections(AnalysisConfig* c)")
    if start < 0:
        return []
    keys = []
    section = None
    for m in CONFIG_TOKEN_RE.finditer(body, start):
        if m.group("section") is not None:
            section = m.group("section")
            continue
        if section is None:
            raise ValueError("a setting before any section: %s" % m.group(0))
        field, path = m.group("field"), m.group("path")
        # The member the key sets names its section: a cross-check that the
        # parser follows the table ("c->window_seconds" is top-level).
        owner = path.rsplit(".", 1)[0] if "." in path else ""
        if owner != section:
            raise ValueError("setting %r points at %r, not into section %r" %
                             (field, path, section))
        keys.append("%s.%s" % (section, field) if section else field)
    return keys


def mentions(text, name):
    """Whether `name` appears in `text` as a whole token."""
    return re.search(r"(?<![A-Za-z0-9_.-])" + re.escape(name) +
                     r"(?![A-Za-z0-9_])", text) is not None


def missing(names, text, render=lambda n: n):
    """The names (deduplicated, in order) whose rendering `text` lacks."""
    out = []
    for name in names:
        if name not in out and not mentions(text, render(name)):
            out.append(name)
    return out


def slug(heading):
    """GitHub's anchor for a Markdown heading's text."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown):
    """Every anchor a Markdown page defines (headings, <a id>)."""
    seen = {}
    out = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else "%s-%d" % (base, count))
    out.update(re.findall(r'<a\s+(?:id|name)="([^"]+)"', markdown))
    return out


def broken_links(page_rel, markdown, source_dir):
    """Relative links of `page_rel` whose file or anchor does not exist."""
    problems = []
    page_dir = os.path.dirname(page_rel)
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    for target in LINK_RE.findall(text):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        rel = os.path.normpath(os.path.join(page_dir, path)) if path else page_rel
        full = os.path.join(source_dir, rel)
        if not os.path.exists(full):
            problems.append("%s: link to %s: no such file" % (page_rel, target))
            continue
        if anchor and rel.endswith(".md"):
            with open(full, encoding="utf-8") as f:
                if anchor not in anchors(f.read()):
                    problems.append("%s: link to %s: no such anchor" %
                                    (page_rel, target))
    return problems


class DocsMatchCode(unittest.TestCase):
    """The repository's docs against its code."""

    def test_every_flag_is_documented(self):
        for directory, page in FLAG_PAGES:
            doc = read(page)
            self.assertTrue(flag_names(read(MAIN_FILES[directory])),
                            "no ABSL_FLAG found in %s" % MAIN_FILES[directory])
            full = os.path.join(SOURCE_DIR, directory)
            sources = ["%s/%s" % (directory, name)
                       for name in sorted(os.listdir(full))
                       if name.endswith(".cc")]
            for rel in sources + FLAG_BLOCKS.get(directory, []):
                gaps = missing(flag_names(read(rel)), doc, lambda f: "--" + f)
                self.assertEqual(
                    gaps, [], "%s does not document %s (ABSL_FLAG in %s)" %
                    (page, ", ".join("--" + g for g in gaps), rel))

    def test_every_metric_family_is_documented(self):
        doc = read("docs/metrics.md")
        sources = ["counters/meanings.cc"] + sorted(
            os.path.relpath(os.path.join(root, n), SOURCE_DIR)
            for folder in ("agent", "collector", "cluster", "gnmi", "server")
            for root, _, names in os.walk(os.path.join(SOURCE_DIR, folder))
            for n in names if n.endswith(".cc"))
        found = 0
        for rel in sources:
            names = metric_names(read(rel))
            found += len(names)
            gaps = missing(names, doc)
            self.assertEqual(gaps, [], "docs/metrics.md does not document %s "
                             "(exported by %s)" % (", ".join(gaps), rel))
        self.assertGreater(found, 50, "too few metric names found: parser?")

    def test_every_finding_kind_has_a_runbook_section(self):
        kinds = finding_kinds(read("analysis/finding.h"))
        self.assertGreaterEqual(len(kinds), 11, "kKnownFindingKinds not found")
        doc = read("docs/findings.md")
        sections = re.findall(r"^##\s+`?([a-z0-9_]+)`?\s*$", doc, re.M)
        gaps = [k for k in kinds if k not in sections]
        self.assertEqual(gaps, [], "docs/findings.md has no '## <kind>' "
                         "section for %s" % ", ".join(gaps))
        unknown = [s for s in sections if s not in kinds]
        self.assertEqual(unknown, [], "docs/findings.md documents kinds the "
                         "collector does not know: %s" % ", ".join(unknown))

    def test_every_analysis_setting_is_documented(self):
        keys = config_keys(read("analysis/analysis_config.cc"))
        self.assertGreaterEqual(len(keys), 20, "Sections() not parsed")
        gaps = missing(keys, read("docs/findings.md"))
        self.assertEqual(gaps, [], "docs/findings.md does not document the "
                         "--analysis_config settings %s" % ", ".join(gaps))

    def test_counter_table_markers(self):
        doc = read("docs/counters.md")
        begin = doc.count("<!-- counter-table:begin -->")
        end = doc.count("<!-- counter-table:end -->")
        self.assertEqual((begin, end), (1, 1), "docs/counters.md needs one "
                         "counter-table:begin and one counter-table:end marker")
        self.assertLess(doc.index("<!-- counter-table:begin -->"),
                        doc.index("<!-- counter-table:end -->"))

    def test_links_resolve(self):
        pages = ["README.md"] + sorted(
            "docs/" + n for n in os.listdir(os.path.join(SOURCE_DIR, "docs"))
            if n.endswith(".md"))
        problems = []
        for rel in pages:
            problems += broken_links(rel, read(rel), SOURCE_DIR)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_docs_cite_nothing_outside_the_repository(self):
        problems = []
        docs = os.path.join(SOURCE_DIR, "docs")
        for name in sorted(os.listdir(docs)):
            if not name.endswith(".md"):
                continue
            for number, line in enumerate(read("docs/" + name).splitlines(), 1):
                if OUTSIDE_RE.search(line):
                    problems.append("docs/%s:%d: %s" % (name, number, line))
        self.assertEqual(problems, [], "\n".join(problems))

    def test_code_cites_nothing_outside_the_repository(self):
        # Comments in the code point at docs/, never at a document that a
        # clone of the repository does not have.
        problems = []
        for top in ("agent", "analysis", "bench", "cli", "client", "cluster",
                    "collector", "common", "counters", "deploy", "gnmi",
                    "proto", "python", "scripts", "server", "sim", "tests"):
            for root, dirs, files in os.walk(os.path.join(SOURCE_DIR, top)):
                dirs[:] = [d for d in dirs if d != "fixtures"]
                for name in sorted(files):
                    if not name.endswith((".cc", ".h", ".proto", ".py", ".sh",
                                          ".cmake", ".txt", ".yml", ".yaml")):
                        continue
                    path = os.path.join(root, name)
                    rel = os.path.relpath(path, SOURCE_DIR)
                    if rel == "tests/docs/docs_consistency_test.py":
                        continue  # names the patterns it looks for
                    with open(path, encoding="utf-8", errors="replace") as f:
                        for number, line in enumerate(f, 1):
                            if OUTSIDE_RE.search(line):
                                problems.append("%s:%d: %s" %
                                                (rel, number, line.rstrip()))
        self.assertEqual(problems, [], "\n".join(problems))


class CheckersCanFail(unittest.TestCase):
    """The parsers and checks above on made-up input: each must notice."""

    def test_flags(self):
        cpp = ('ABSL_FLAG(std::string, node, "", "x, y");\n'
               "// ABSL_FLAG(bool, commented_out, false, \"\");\n"
               "ABSL_FLAG(absl::Duration, interval, absl::Seconds(1), \"\");\n"
               'ABSL_FLAG(std::vector<std::string>, hosts, {}, "");\n')
        self.assertEqual(flag_names(cpp), ["node", "interval", "hosts"])
        doc = "| `--node=NAME` | ... |\n| `--interval_ms` | ... |"
        self.assertEqual(missing(flag_names(cpp), doc, lambda f: "--" + f),
                         ["interval", "hosts"])

    def test_comments_and_literals(self):
        cpp = ('int n = 30\'000;  // ABSL_FLAG(int, a, 0, "");\n'
               "char q = '\"'; /* ABSL_FLAG(int, b, 0, \"\"); */\n"
               'const char* s = "// ABSL_FLAG(int, c, 0, x)";\n'
               'ABSL_FLAG(int, d, 0, "");\n')
        self.assertEqual(flag_names(cpp), ["c", "d"])

    def test_metrics(self):
        cpp = ('f->Add("fabricdiag_agent_up", ...);\n'
               'Family("fabricdiag_agent_up_total", ...);\n'
               'std::string p = "fabricdiag_phy_";  // a prefix, not a name\n')
        names = metric_names(cpp)
        self.assertEqual(names, ["fabricdiag_agent_up",
                                 "fabricdiag_agent_up_total"])
        self.assertEqual(missing(names, "`fabricdiag_agent_up_total` only"),
                         ["fabricdiag_agent_up"])

    def test_kinds(self):
        header = ('inline constexpr const char* kKnownFindingKinds[] = {\n'
                  '    "pfc_storm", "agent_down"};\n')
        self.assertEqual(finding_kinds(header), ["pfc_storm", "agent_down"])

    def test_config_keys(self):
        cpp = ("std::vector<Section> Sections(AnalysisConfig* c) {\n"
               '  return {{"", {{"window_seconds", &c->window_seconds, '
               "nullptr, 1, 600}}},\n"
               '          {"hysteresis",\n'
               '           {{"open_after", nullptr, &c->hysteresis.open_after,'
               " 1, 100}}}};\n}\n")
        self.assertEqual(config_keys(cpp),
                         ["window_seconds", "hysteresis.open_after"])
        self.assertEqual(
            missing(config_keys(cpp), "`hysteresis.open_after_x`"),
            ["window_seconds", "hysteresis.open_after"])
        confused = cpp.replace("&c->hysteresis.open_after", "&c->other.x")
        self.assertRaises(ValueError, config_keys, confused)

    def test_links(self):
        page = "# Title\n## `--once`\n## Flags\n## Flags\n"
        self.assertEqual(anchors(page), {"title", "--once", "flags", "flags-1"})
        tmp = os.path.join(os.path.dirname(os.path.abspath(__file__)))
        me = os.path.basename(__file__)
        text = "[ok](%s) [gone](nothere.md) [web](https://x.org/a.md)" % me
        self.assertEqual(broken_links("page.md", text, tmp),
                         ["page.md: link to nothere.md: no such file"])


def main():
    global SOURCE_DIR
    argv = [sys.argv[0]]
    for arg in sys.argv[1:]:
        if arg.startswith("--source_dir="):
            SOURCE_DIR = os.path.abspath(arg.split("=", 1)[1])
        else:
            argv.append(arg)
    unittest.main(argv=argv, verbosity=2)


if __name__ == "__main__":
    main()
