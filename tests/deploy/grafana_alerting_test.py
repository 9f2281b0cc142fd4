#!/usr/bin/env python3
"""Checks deploy/grafana/provisioning/alerting/fabricdiag-alerts.yaml.

1. Its structure, against Grafana's file provisioning format for alert
   rules (apiVersion 1): required keys and their types, no unknown key (a
   misspelt key is silently ignored by Grafana), uids unique and at most 40
   characters of [A-Za-z0-9_-], the condition and every expression name a
   refId of the rule, relativeTimeRange on every query, durations that
   parse, noDataState and execErrState from the documented set, queries on
   the datasource that provisioning/datasources/ defines, and no `$`
   outside annotations (Grafana would expand it as an environment
   variable).
2. That it mirrors deploy/prometheus/rules/fabricdiag-alerts.yml: one
   Grafana rule per alert of the findings and agents groups, with the same
   title, the expression split into the query and a threshold, the same
   `for`, labels and annotations (collector_url aside, see 3); and exactly
   one rule per finding kind of analysis/finding.h and of docs/findings.md.
   In both files, every alert on a series that all collectors of a cluster
   export (fabricdiag_finding_active, fabricdiag_agent_up) aggregates the
   scrape's `instance` away, `max without (instance) (...)`, so that a
   finding is one alert whichever collectors serve it, and no annotation
   of it uses the label it dropped.
3. That every runbook_url of both files points into the documentation the
   collector package installs, at a heading that exists (a finding alert
   at its kind's section), and every collector alert links a collector:
   in Prometheus through a `query` for the collectors serving the series,
   in Grafana (whose `query` returns nothing) through an Explore table of
   the same series; that table link, filled with a finding's labels, is
   JSON on the provisioned datasource whose PromQL parses.
4. With promtool: every Grafana query parses, and the Grafana rules turned
   back into Prometheus alerts (with the Prometheus collector_url, since
   promtool cannot run Grafana's template functions) pass the unit tests
   of deploy/prometheus/tests/findings_test.yml: one collector, and three
   collectors serving the same findings.

  grafana_alerting_test.py SOURCE_DIR
Exits 77 (skipped) when promtool or python3-yaml is not installed.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILURES = []

# The Prometheus groups the Grafana file repeats; the raw-counter group reads
# recording rules and stays in Prometheus.
MIRRORED_GROUPS = ("fabricdiag-findings", "fabricdiag-agents")
# Where the collector package puts docs/ (deploy/packaging.cmake).
RUNBOOK_PREFIX = "file:///usr/share/doc/fabricdiag-collector/docs/"
# collector_url of a rule about one collector (it keeps `instance`).
COLLECTOR_URL = "http://{{ $labels.instance }}/"
# Series every collector of a cluster exports alike: their alerts aggregate
# the scrape's instance away, and link a collector serving the series.
AGGREGATED_METRICS = ("fabricdiag_finding_active", "fabricdiag_agent_up")
AGGREGATED_RE = re.compile(r"^max without \(instance\) \((fabricdiag_[a-z_]+)"
                           r"(\{[^{}]*\})?\)$")
# The series a collector_url looks up, per metric: Prometheus `printf`
# format (%q quotes), then its labels.
LOOKUP = {
    "fabricdiag_finding_active": (
        "fabricdiag_finding_active{kind=%q,node=%q,device=%q,"
        "exported_job=%q}", ("kind", "node", "device", "exported_job")),
    "fabricdiag_agent_up": ("fabricdiag_agent_up{node=%q} == 0", ("node",)),
}


def prometheus_collector_url(metric):
    fmt, labels = LOOKUP[metric]
    args = " ".join(f"$labels.{label}" for label in labels)
    return (f'{{{{ with printf "{fmt.replace(chr(34), chr(92) + chr(34))}" '
            f'{args} | query }}}}http://{{{{ . | sortByLabel "instance" | '
            f'first | label "instance" }}}}/{{{{ end }}}}')


def grafana_collector_url(metric, ds_uid):
    fmt, labels = LOOKUP[metric]
    fmt = fmt.replace("%q", "'%s'")
    args = " ".join(f"$labels.{label}" for label in labels)
    return ('{{ reReplaceAll "/$" "" externalURL }}{{ tableLink (printf '
            f'"{{\\"expr\\": \\"{fmt}\\", \\"datasource\\": '
            f'\\"{ds_uid}\\"}}" {args}) }}}}')


# A finding's labels to fill the Grafana link with.
SAMPLE_LABELS = {"kind": "pfc_storm", "node": "gpu-005", "device": "mlx5_1",
                 "exported_job": "moe-train-42"}


def render_grafana_link(where, url):
    """The JSON tableLink gets from a Grafana collector_url, or None."""
    m = re.search(r'tableLink \(printf "((?:[^"\\]|\\.)*)"((?: \$labels\.'
                  r'[a-z_]+)+)\) \}\}$', url)
    if not m:
        fail(f"{where}: collector_url is not a tableLink of printf: {url!r}")
        return None
    fmt = m.group(1).replace('\\"', '"')
    labels = [a[len("$labels."):] for a in m.group(2).split()]
    text = fmt % tuple(SAMPLE_LABELS.get(label, "") for label in labels)
    try:
        return json.loads(text)
    except ValueError as e:
        fail(f"{where}: the tableLink argument is not JSON ({e}): {text}")
        return None
EXPR_DATASOURCE = "__expr__"

# The documented keys (file provisioning of alert rules, apiVersion 1).
TOP_KEYS = {"apiVersion": int, "groups": list}
GROUP_KEYS = {"orgId": int, "name": str, "folder": str, "interval": str,
              "rules": list}
RULE_REQUIRED = {"uid": str, "title": str, "condition": str, "data": list,
                 "noDataState": str, "execErrState": str, "for": str,
                 "labels": dict, "annotations": dict}
RULE_OPTIONAL = {"dashboardUid": str, "panelId": int, "isPaused": bool}
QUERY_KEYS = {"refId": str, "relativeTimeRange": dict, "datasourceUid": str,
              "model": dict}
QUERY_OPTIONAL = {"queryType": str}
NO_DATA_STATES = {"NoData", "Alerting", "OK"}
EXEC_ERR_STATES = {"Error", "Alerting", "OK"}
EXPRESSION_TYPES = {"math", "reduce", "resample", "classic_conditions",
                    "threshold"}
# Threshold evaluators and how many parameters each takes.
EVALUATORS = {"gt": 1, "lt": 1, "within_range": 2, "outside_range": 2}
# Grafana schedules rules on a 10 s tick: group intervals are multiples.
GRAFANA_TICK_SECONDS = 10

# Prometheus' duration syntax (Grafana parses `for` and `interval` with it).
DURATION_RE = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?"
                         r"(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
DURATION_UNITS = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)
UID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
# An alert expression: a query, then one comparison with a number.
COMPARISON_RE = re.compile(r"^(.*\S)\s*(>|==)\s*(-?[0-9.]+)$")


def fail(msg):
    FAILURES.append(msg)


def seconds(duration):
    """A Prometheus duration in seconds, or None when it does not parse."""
    if not isinstance(duration, str) or not duration:
        return None
    m = DURATION_RE.match(duration)
    if not m:
        return None
    return sum(int(n) * unit for n, unit in zip(m.groups(), DURATION_UNITS)
               if n)


def check_keys(where, obj, required, optional=None):
    """Required keys present with their types; no key Grafana would ignore."""
    optional = optional or {}
    if not isinstance(obj, dict):
        fail(f"{where}: not a mapping")
        return False
    ok = True
    for key, kind in required.items():
        if key not in obj:
            fail(f"{where}: `{key}` missing")
            ok = False
        elif not isinstance(obj[key], kind) or (kind is int and
                                                isinstance(obj[key], bool)):
            fail(f"{where}: `{key}` is not a {kind.__name__}: {obj[key]!r}")
            ok = False
    for key, kind in optional.items():
        if key in obj and not isinstance(obj[key], kind):
            fail(f"{where}: `{key}` is not a {kind.__name__}")
    for key in obj:
        if key not in required and key not in optional:
            fail(f"{where}: unknown key `{key}` (Grafana ignores it)")
    return ok


def dollars_outside_annotations(node, path=""):
    """Paths of strings outside annotations that hold a lone `$`."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key != "annotations":
                found += dollars_outside_annotations(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += dollars_outside_annotations(value, f"{path}[{i}]")
    elif isinstance(node, str) and "$" in node.replace("$$", ""):
        found.append(path)
    return found


def check_rule(where, rule, ds_uid, interval):
    """Structure of one rule. Returns (query expr, evaluator, params) or None."""
    if not check_keys(where, rule, RULE_REQUIRED, RULE_OPTIONAL):
        return None
    if not UID_RE.match(rule["uid"]):
        fail(f"{where}: uid {rule['uid']!r} is not 1-40 of [A-Za-z0-9_-]")
    if rule["noDataState"] not in NO_DATA_STATES:
        fail(f"{where}: noDataState {rule['noDataState']!r} is not one of "
             f"{sorted(NO_DATA_STATES)}")
    if rule["execErrState"] not in EXEC_ERR_STATES:
        fail(f"{where}: execErrState {rule['execErrState']!r} is not one of "
             f"{sorted(EXEC_ERR_STATES)}")
    pending = seconds(rule["for"])
    if pending is None:
        fail(f"{where}: `for` {rule['for']!r} is not a duration")
    elif interval and pending % interval:
        fail(f"{where}: `for` {rule['for']} is not a multiple of the group "
             f"interval")
    for field in ("labels", "annotations"):
        for key, value in rule[field].items():
            if not isinstance(key, str) or not isinstance(value, str):
                fail(f"{where}: {field}.{key} is not a string")
    for path in dollars_outside_annotations(rule):
        fail(f"{where}{path}: a `$` outside annotations (Grafana expands it "
             f"as an environment variable; write $$)")
    for key, value in rule["annotations"].items():
        if isinstance(value, str) and "${" in value:
            fail(f"{where}: annotations.{key} holds `${{` (recent Grafana "
                 f"expands it as an environment variable)")

    queries = {}
    for i, q in enumerate(rule["data"]):
        qwhere = f"{where} data[{i}]"
        if not check_keys(qwhere, q, QUERY_KEYS, QUERY_OPTIONAL):
            continue
        ref = q["refId"]
        if ref in queries:
            fail(f"{qwhere}: refId {ref} twice")
        queries[ref] = q
        span = q["relativeTimeRange"]
        if not (isinstance(span.get("from"), int) and
                isinstance(span.get("to"), int) and
                span["from"] >= span["to"] >= 0):
            fail(f"{qwhere}: relativeTimeRange needs integer from >= to >= 0, "
                 f"got {span}")
        if q["model"].get("refId") != ref:
            fail(f"{qwhere}: model.refId is not {ref}")
    if rule["condition"] not in queries:
        fail(f"{where}: condition {rule['condition']!r} names no refId "
             f"({sorted(queries)})")
        return None

    exprs = {}
    for ref, q in queries.items():
        model = q["model"]
        if q["datasourceUid"] == EXPR_DATASOURCE:
            if model.get("type") not in EXPRESSION_TYPES:
                fail(f"{where} {ref}: expression type {model.get('type')!r}")
            if model.get("expression") not in queries:
                fail(f"{where} {ref}: expression {model.get('expression')!r} "
                     f"names no refId")
            continue
        if q["datasourceUid"] != ds_uid:
            fail(f"{where} {ref}: datasourceUid {q['datasourceUid']!r} is not "
                 f"the provisioned {ds_uid!r}")
        if model.get("datasource", {}).get("uid", ds_uid) != ds_uid:
            fail(f"{where} {ref}: model.datasource.uid is not {ds_uid!r}")
        if not isinstance(model.get("expr"), str) or not model["expr"]:
            fail(f"{where} {ref}: a query without expr")
            continue
        if model.get("instant") is not True:
            fail(f"{where} {ref}: not an instant query (one value per series)")
        exprs[ref] = model["expr"]

    # The shape every rule of ours has: the condition is a threshold on the
    # one query.
    cond = queries[rule["condition"]]["model"]
    if cond.get("type") != "threshold" or cond.get("expression") not in exprs:
        fail(f"{where}: the condition is not a threshold on a query")
        return None
    conditions = cond.get("conditions")
    evaluator = (conditions[0].get("evaluator", {})
                 if isinstance(conditions, list) and len(conditions) == 1 and
                 isinstance(conditions[0], dict) else {})
    kind, params = evaluator.get("type"), evaluator.get("params")
    if kind not in EVALUATORS or not isinstance(params, list) or \
            len(params) != EVALUATORS[kind] or \
            not all(isinstance(p, (int, float)) for p in params):
        fail(f"{where}: threshold evaluator {evaluator!r}")
        return None
    return exprs[cond["expression"]], kind, [float(p) for p in params]


def query_exprs(rule):
    """The PromQL of a rule's queries, whatever else is wrong with it."""
    data = rule.get("data") if isinstance(rule, dict) else None
    return [q["model"]["expr"] for q in data or []
            if isinstance(q, dict) and isinstance(q.get("model"), dict) and
            isinstance(q["model"].get("expr"), str)]


def zero_one_metrics(metrics_md):
    """Metric names docs/metrics.md documents with the unit 0/1, and `up`."""
    names = {"up"}
    for line in metrics_md.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 5 and cells[1].startswith("`") and "0/1" in cells[4]:
            names.add(cells[1].strip("`"))
    return names


def threshold_of(where, prom_expr, zero_one):
    """The Grafana (query, evaluator, params) of a Prometheus expression."""
    m = COMPARISON_RE.match(prom_expr)
    if not m:
        fail(f"{where}: {prom_expr!r} is not `query > n` or `query == n`")
        return None
    query, op, value = m.group(1), m.group(2), float(m.group(3))
    if op == ">":
        return query, "gt", [value]
    # `== 0` on a gauge that is only ever 0 or 1 is `< 1` (also its
    # maximum over the collectors).
    agg = AGGREGATED_RE.match(query)
    metric = agg.group(1) if agg else \
        re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", query).group(0)
    if value == 0 and metric in zero_one:
        return query, "lt", [1.0]
    fail(f"{where}: {prom_expr!r} has no threshold: `== 0` is `lt 1` on "
         f"documented 0/1 gauges only, and no other `==` is translated")
    return None


def as_prometheus(kind, params, query):
    """A threshold on a query as a PromQL alert expression."""
    return f"({query}) {'>' if kind == 'gt' else '<'} {params[0]:g}"


def load_docs_checker(src):
    """tests/docs/docs_consistency_test.py: its kinds and anchors parsers."""
    path = f"{src}/tests/docs/docs_consistency_test.py"
    spec = importlib.util.spec_from_file_location("docs_consistency", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_runbook(where, annotations, kind, src, docs_checker):
    url = annotations.get("runbook_url")
    if url is None:
        fail(f"{where}: no runbook_url")
        return
    if not url.startswith(RUNBOOK_PREFIX):
        fail(f"{where}: runbook_url {url} does not start with {RUNBOOK_PREFIX}")
        return
    page, _, anchor = url[len(RUNBOOK_PREFIX):].partition("#")
    full = f"{src}/docs/{page}"
    if not os.path.isfile(full):
        fail(f"{where}: runbook_url names docs/{page}, which does not exist")
        return
    with open(full, encoding="utf-8") as f:
        if anchor not in docs_checker.anchors(f.read()):
            fail(f"{where}: runbook_url {url}: docs/{page} has no heading "
                 f"with the anchor #{anchor}")
    if kind and (page, anchor) != ("findings.md", kind):
        fail(f"{where}: the runbook of finding kind {kind} is "
             f"findings.md#{kind}, not {page}#{anchor}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    src = os.path.abspath(sys.argv[1])
    if shutil.which("promtool") is None:
        print("SKIP: promtool not found (apt-get install prometheus)")
        return 77
    try:
        import yaml
    except ImportError:
        print("SKIP: python3-yaml not installed")
        return 77
    docs_checker = load_docs_checker(src)

    def load(rel):
        with open(f"{src}/{rel}", encoding="utf-8") as f:
            return yaml.safe_load(f)

    def read(rel):
        with open(f"{src}/{rel}", encoding="utf-8") as f:
            return f.read()

    datasources = load("deploy/grafana/provisioning/datasources/"
                       "fabricdiag.yml").get("datasources", [])
    ds_uid = datasources[0].get("uid") if len(datasources) == 1 else None
    if not ds_uid or datasources[0].get("type") != "prometheus":
        fail("the datasource provisioning file does not define one "
             "Prometheus datasource with a uid")

    # The packages install docs/ where the runbook links point.
    packaging = read("deploy/packaging.cmake")
    if not re.search(r"DESTINATION share/doc/fabricdiag-collector/docs "
                     r"COMPONENT collector", packaging) or \
            "CPACK_PACKAGING_INSTALL_PREFIX /usr)" not in packaging:
        fail(f"deploy/packaging.cmake no longer installs docs/ to "
             f"{RUNBOOK_PREFIX[len('file://'):]}")

    # 1. Structure.
    rel = "deploy/grafana/provisioning/alerting/fabricdiag-alerts.yaml"
    doc = load(rel)
    grafana = {}    # title -> (group name, rule, (query, evaluator, params))
    uids = set()
    if check_keys(rel, doc, TOP_KEYS) and doc["apiVersion"] != 1:
        fail(f"{rel}: apiVersion is {doc['apiVersion']}, not 1")
    for gi, group in enumerate((doc or {}).get("groups") or []):
        gwhere = f"{rel} groups[{gi}]"
        if not check_keys(gwhere, group, GROUP_KEYS):
            continue
        gwhere = f"{rel} group {group['name']}"
        interval = seconds(group["interval"])
        if not interval or interval % GRAFANA_TICK_SECONDS:
            fail(f"{gwhere}: interval {group['interval']!r} is not a multiple "
                 f"of {GRAFANA_TICK_SECONDS}s")
        for path in dollars_outside_annotations(
                {k: v for k, v in group.items() if k != "rules"}):
            fail(f"{gwhere}{path}: a `$` (Grafana expands it)")
        for ri, rule in enumerate(group["rules"]):
            where = f"{gwhere} rules[{ri}]"
            if isinstance(rule, dict) and isinstance(rule.get("title"), str):
                where = f"{gwhere} rule {rule['title']}"
            parsed = check_rule(where, rule, ds_uid, interval)
            if not isinstance(rule, dict):
                continue
            if rule.get("uid") in uids:
                fail(f"{where}: uid {rule.get('uid')} twice")
            uids.add(rule.get("uid"))
            if rule.get("title") in grafana:
                fail(f"{where}: title twice")
            grafana[rule.get("title")] = (group["name"], rule, parsed)

    # 2. The mirror of the Prometheus rules.
    prom_rel = "deploy/prometheus/rules/fabricdiag-alerts.yml"
    prom = {}
    all_prom = []
    for group in load(prom_rel)["groups"]:
        for rule in group["rules"]:
            all_prom.append(rule)
            if group["name"] in MIRRORED_GROUPS:
                prom[rule["alert"]] = (group["name"], rule)
    zero_one = zero_one_metrics(read("docs/metrics.md"))
    for name in sorted(set(prom) - set(grafana)):
        fail(f"{rel}: no rule for the Prometheus alert {name}")
    for name in sorted(set(grafana) - set(prom)):
        fail(f"{rel}: rule {name} is no alert of {prom_rel} "
             f"(groups {', '.join(MIRRORED_GROUPS)})")
    for name in sorted(set(prom) & set(grafana)):
        where = f"{rel} rule {name}"
        (pgroup, prule), (ggroup, grule, parsed) = prom[name], grafana[name]
        if pgroup != ggroup:
            fail(f"{where}: in group {ggroup}, the Prometheus alert in {pgroup}")
        expected = threshold_of(f"{prom_rel} {name}", prule["expr"], zero_one)
        if parsed and expected and parsed != expected:
            fail(f"{where}: query and threshold {parsed} are not the "
                 f"Prometheus expression {prule['expr']!r} ({expected})")
        if seconds(grule.get("for")) != seconds(prule.get("for", "0s")):
            fail(f"{where}: for {grule.get('for')}, Prometheus "
                 f"{prule.get('for', '0s')}")
        for field in ("labels", "annotations"):
            mine, theirs = grule.get(field) or {}, prule.get(field, {})
            for key in sorted(set(mine) | set(theirs)):
                if field == "annotations" and key == "collector_url" and \
                        key in mine and key in theirs:
                    continue  # differs by design: checked in 3.
                if mine.get(key) != theirs.get(key):
                    fail(f"{where}: {field}.{key} is {mine.get(key)!r}, "
                         f"Prometheus' {theirs.get(key)!r}")

    kinds = set(docs_checker.finding_kinds(read("analysis/finding.h")))
    sections = set(re.findall(r"^##\s+`?([a-z0-9_]+)`?\s*$",
                              read("docs/findings.md"), re.M))
    if len(kinds) < 11:
        fail("analysis/finding.h: kKnownFindingKinds not found")
    for kind in sorted(kinds | sections):
        rules = [t for t, (_, rule, _) in grafana.items()
                 if any(f'kind="{kind}"' in e for e in query_exprs(rule))]
        if len(rules) != 1:
            fail(f"{rel}: {len(rules)} rules for finding kind {kind} "
                 f"({', '.join(rules)}); want exactly one")

    # 2b. One alert per finding across collectors, in both files.
    aggregated = {}   # Prometheus alert name -> the metric it aggregates
    for rule in all_prom:
        name, expr = rule["alert"], rule["expr"]
        if not any(metric in expr for metric in AGGREGATED_METRICS):
            continue
        query = COMPARISON_RE.match(expr)
        agg = AGGREGATED_RE.match(query.group(1)) if query else None
        if not agg or agg.group(1) not in AGGREGATED_METRICS:
            fail(f"{prom_rel} {name}: {expr!r} does not aggregate the "
                 f"collectors' instance away: want `max without (instance) "
                 f"(metric{{...}}) > n` (one alert per finding in a cluster)")
            continue
        aggregated[name] = agg.group(1)
    for title, (_, rule, parsed) in sorted(grafana.items()):
        if parsed and title not in aggregated and \
                any(metric in parsed[0] for metric in AGGREGATED_METRICS):
            fail(f"{rel} rule {title}: query {parsed[0]!r} does not aggregate "
                 f"the collectors' instance away")
    for name in aggregated:
        for where, rule in ((f"{prom_rel} {name}", prom.get(name, (0, {}))[1]),
                            (f"{rel} rule {name}",
                             grafana.get(name, (0, {}))[1])):
            for key, value in (rule.get("annotations") or {}).items():
                if re.search(r"\$labels\.instance\b", str(value)):
                    fail(f"{where}: annotations.{key} uses $labels.instance, "
                         f"which the expression aggregates away")

    # 3. Runbook and collector links, in both files.
    probe = []    # PromQL of the Grafana links, for promtool
    for title, (_, rule, parsed) in sorted(grafana.items()):
        where = f"{rel} rule {title}"
        annotations = rule.get("annotations", {})
        m = re.search(r'kind="([a-z_]+)"', parsed[0]) if parsed else None
        check_runbook(where, annotations, m and m.group(1), src, docs_checker)
        url = annotations.get("collector_url")
        if title in aggregated:
            want = grafana_collector_url(aggregated[title], ds_uid)
            if url != want:
                fail(f"{where}: collector_url is {url!r}, not {want!r}")
            link = render_grafana_link(where, url or "")
            if link is not None:
                if link.get("datasource") != ds_uid:
                    fail(f"{where}: the table link's datasource is not "
                         f"{ds_uid!r}")
                if not str(link.get("expr", "")).startswith(
                        aggregated[title] + "{"):
                    fail(f"{where}: the table link's query is not on "
                         f"{aggregated[title]}")
                probe.append((title, str(link.get("expr"))))
        elif url is not None and url != COLLECTOR_URL:
            fail(f"{where}: collector_url is not {COLLECTOR_URL}")
    for rule in all_prom:
        name = rule["alert"]
        annotations = rule.get("annotations", {})
        m = re.search(r'kind="([a-z_]+)"', rule["expr"])
        check_runbook(f"{prom_rel} {name}", annotations, m and m.group(1),
                      src, docs_checker)
        url = annotations.get("collector_url")
        if name in aggregated:
            want = prometheus_collector_url(aggregated[name])
            if url != want:
                fail(f"{prom_rel} {name}: collector_url is {url!r}, not "
                     f"{want!r}")
        elif url is not None and url != COLLECTOR_URL:
            fail(f"{prom_rel} {name}: collector_url is not {COLLECTOR_URL}")

    # 4. promtool.
    work = tempfile.mkdtemp(prefix="grafana-alerting.")
    try:
        parsed_rules = [(t, r, p) for t, (_, r, p) in grafana.items() if p]
        with open(f"{work}/queries.yml", "w") as f:
            yaml.safe_dump({"groups": [{"name": "grafana-queries", "rules": [
                {"alert": t, "expr": p[0]} for t, _, p in parsed_rules] + [
                {"alert": f"{t}Link", "expr": e} for t, e in probe]}]}, f)
        r = subprocess.run(["promtool", "check", "rules", f"{work}/queries.yml"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("a Grafana query does not parse:\n" + r.stdout + r.stderr)

        translated = []
        for title, rule, (query, kind, params) in parsed_rules:
            if kind not in ("gt", "lt"):
                continue
            annotations = dict(rule["annotations"])
            if "collector_url" in annotations and title in prom:
                annotations["collector_url"] = \
                    prom[title][1]["annotations"].get("collector_url")
            alert = {"alert": title, "expr": as_prometheus(kind, params, query),
                     "for": rule["for"], "annotations": annotations}
            if rule["labels"]:
                alert["labels"] = rule["labels"]
            translated.append(alert)
        with open(f"{work}/translated.yml", "w") as f:
            yaml.safe_dump({"groups": [{"name": "grafana",
                                        "rules": translated}]}, f)
        unit = load("deploy/prometheus/tests/findings_test.yml")
        unit["rule_files"] = [
            f"{src}/deploy/prometheus/rules/fabricdiag-recording.yml",
            f"{work}/translated.yml"]
        with open(f"{work}/findings_test.yml", "w") as f:
            yaml.safe_dump(unit, f)
        r = subprocess.run(["promtool", "test", "rules", "findings_test.yml"],
                           cwd=work, capture_output=True, text=True)
        if r.returncode != 0:
            fail("the Grafana rules, as Prometheus alerts, fail "
                 "deploy/prometheus/tests/findings_test.yml:\n" + r.stdout +
                 r.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    for f in FAILURES:
        print("FAIL:", f, file=sys.stderr)
    if FAILURES:
        return 1
    print(f"PASS: {len(grafana)} Grafana rules in the documented format, "
          f"equal to the Prometheus alerts, one per finding kind "
          f"({len(kinds)}), runbook links resolve, queries parse, and the "
          f"promtool unit tests pass on them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
