"""Builds fabricdiag layout documents (docs/layout-format.md) in plain Python.

No torch and no network here: the functions take what each rank knows
(global rank, host, local GPU, NIC) and return the layout as a dict ready to
be sent as JSON. The checks mirror the collector's (analysis/layout_model.cc)
so that a layout built here is accepted there; a violation raises
LayoutError naming the field, like the collector's 400 answers do.

    from fabricdiag import layout
    doc = layout.build_from_ranks(
        "moe-train-42",
        [layout.RankInfo(0, "gpu-000", 0, "mlx5_0"), ...],
        tp=8, pp=4, ep=8)
"""

import collections
import itertools
import os
import re

DIMS = ("tp", "cp", "ep", "dp", "pp")
DEFAULT_ORDER = "tp-cp-ep-dp-pp"
MAX_RANKS = 262144
MAX_GPUS_PER_NODE = 1024
MAX_HOSTS = 32768

_JOB_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_NODE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")
_NIC_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}\Z")
_MODEL_INT_FIELDS = {
    "hidden": 10000000, "layers": 100000, "seq_len": 1000000000,
    "micro_batch": 10000000, "micro_batches": 10000000, "dtype_bytes": 8,
    "experts": 1000000, "top_k": 1000000,
}

# One rank's placement as gathered from the training processes; nic is None
# when unknown (the collector then fills it from the agent's GPU-NIC pairing).
RankInfo = collections.namedtuple("RankInfo", "rank host gpu nic")


class LayoutError(ValueError):
    """A layout the collector would refuse; the message names the field."""

    def __init__(self, field, message):
        super().__init__("%s: %s" % (field, message))
        self.field = field


def is_valid_job_name(name):
    return isinstance(name, str) and bool(_JOB_RE.match(name))


def is_valid_node_name(name):
    return isinstance(name, str) and bool(_NODE_RE.match(name))


def is_valid_nic_name(name):
    return isinstance(name, str) and bool(_NIC_RE.match(name))


def sanitize_job_name(raw):
    """Maps any string onto [A-Za-z0-9][A-Za-z0-9._-]{0,63}, or None if empty.

    Characters outside the set become '-', leading non-alphanumerics are
    dropped and the result is cut at 64 characters.
    """
    if raw is None:
        return None
    name = re.sub(r"[^A-Za-z0-9._-]", "-", str(raw))
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:64]
    return name or None


# Scheduler variables, first match wins: (environment variable, prefix).
# SLURM_JOB_ID gives "slurm-<id>", the name deploy/slurm's prolog declares,
# so an exact declaration from the job replaces the prolog's coarse one.
JOB_ENV = (
    ("FABRICDIAG_JOB", ""),
    ("SLURM_JOB_ID", "slurm-"),
    ("TORCHELASTIC_RUN_ID", ""),
    ("PBS_JOBID", "pbs-"),
    ("LSB_JOBID", "lsf-"),
    ("JOB_ID", "sge-"),
)


def job_name_from_env(env=None):
    """The job name the scheduler gives, sanitised; None when there is none.

    torchrun's default rendezvous id "none" does not name a job and is
    skipped.
    """
    env = os.environ if env is None else env
    for var, prefix in JOB_ENV:
        value = env.get(var, "").strip()
        if not value or (var == "TORCHELASTIC_RUN_ID" and value == "none"):
            continue
        name = sanitize_job_name(prefix + value)
        if name:
            return name
    return None


def parse_order(order, degrees):
    """Checks a Megatron-LM order string as the collector does.

    Returns the full list of the five dimensions, fastest first (tokens left
    out are appended, which is only allowed for degree 1).
    """
    if not isinstance(order, str):
        raise LayoutError("parallelism.order", "expected a string, got %r" % (order,))
    tokens = [t.strip().lower() for t in order.split("-")]
    seen = []
    for t in tokens:
        if t not in DIMS:
            raise LayoutError("parallelism.order",
                              '"%s": unknown token "%s" (expected tp, cp, ep, dp, pp)'
                              % (order, t))
        if t in seen:
            raise LayoutError("parallelism.order",
                              '"%s": %s given twice' % (order, t))
        seen.append(t)
    for d in DIMS:
        if d not in seen:
            if degrees[d] != 1:
                raise LayoutError("parallelism.order",
                                  '"%s" omits %s, whose degree is %d'
                                  % (order, d, degrees[d]))
            seen.append(d)
    return seen


def _check_int(field, value, low, high):
    # bool is an int in Python; the layout format wants a plain integer.
    if isinstance(value, bool) or not isinstance(value, int):
        raise LayoutError(field, "expected an integer, got %r" % (value,))
    if value < low or value > high:
        raise LayoutError(field, "%d is out of range [%d, %d]" % (value, low, high))


def parallelism(world, tp=1, pp=1, ep=1, cp=1, order=None):
    """The `parallelism` block for `world` ranks: dp = world / (tp*cp*pp)."""
    for name, value in (("tp", tp), ("pp", pp), ("ep", ep), ("cp", cp)):
        _check_int("parallelism." + name, value, 1, MAX_RANKS)
    _check_int("ranks", world, 1, MAX_RANKS)
    model_size = tp * cp * pp
    if world % model_size != 0:
        raise LayoutError("parallelism",
                          "world size %d is not divisible by tp*cp*pp = %d"
                          % (world, model_size))
    dp = world // model_size
    if (dp * cp) % ep != 0:
        raise LayoutError("parallelism.ep",
                          "%d does not divide dp*cp = %d" % (ep, dp * cp))
    block = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep}
    if order is not None:
        parse_order(order, block)
        block["order"] = order
    return block


def check_model(model, ep):
    """Checks the optional `model` block (docs/layout-format.md)."""
    if not isinstance(model, dict):
        raise LayoutError("model", "expected a mapping, got %r" % (model,))
    for key, value in model.items():
        field = "model." + str(key)
        if key == "params":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise LayoutError(field, "expected a number, got %r" % (value,))
            if not 1 <= value <= 1e16:
                raise LayoutError(field, "%r is out of range [1, 1e16]" % (value,))
        elif key in _MODEL_INT_FIELDS:
            _check_int(field, value, 1, _MODEL_INT_FIELDS[key])
        else:
            raise LayoutError(field, "unknown key")
    if "experts" in model and model["experts"] % ep != 0:
        raise LayoutError("model.experts", "%d is not divisible by parallelism.ep = %d"
                          % (model["experts"], ep))
    if "top_k" in model and "experts" in model and model["top_k"] > model["experts"]:
        raise LayoutError("model.top_k", "%d exceeds model.experts = %d"
                          % (model["top_k"], model["experts"]))


def _finish(doc, par, model, nvlink_domain):
    if nvlink_domain is not None:
        _check_int("nvlink_domain", nvlink_domain, 1, MAX_RANKS)
        gpn = doc["gpus_per_node"]
        if gpn % nvlink_domain and nvlink_domain % gpn:
            raise LayoutError("nvlink_domain",
                              "%d is neither a divisor nor a multiple of "
                              "gpus_per_node = %d" % (nvlink_domain, gpn))
        doc["nvlink_domain"] = nvlink_domain
    doc["parallelism"] = par
    if model is not None:
        check_model(model, par["ep"])
        doc["model"] = dict(model)
    return doc


def build_from_ranks(job, ranks, tp=1, pp=1, ep=1, cp=1, order=None,
                     model=None, nvlink_domain=None, gpus_per_node=None):
    """A layout with explicit `ranks` from one RankInfo per rank.

    gpu may be None for a rank that does not know its local GPU: it then
    gets the lowest index its host has free, in rank order. `hosts` lists
    the hosts by their first rank (the node-rank order of torchrun and
    srun), which is the order NVLink domains larger than a host follow.
    gpus_per_node defaults to the larger of the most ranks on one host and
    the highest GPU index + 1.
    """
    if not is_valid_job_name(job):
        raise LayoutError("job", "%r must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}" % (job,))
    ranks = sorted(ranks, key=lambda r: r.rank)
    world = len(ranks)
    par = parallelism(world, tp=tp, pp=pp, ep=ep, cp=cp, order=order)
    hosts = []
    used = {}  # host -> GPU indices taken
    for i, r in enumerate(ranks):
        field = "ranks[%d]" % i
        if r.rank != i:
            raise LayoutError(field + ".rank",
                              "expected rank %d, got %r (every rank exactly once)" % (i, r.rank))
        if not is_valid_node_name(r.host):
            raise LayoutError(field + ".host",
                              "%r is not a valid host name ([A-Za-z0-9][A-Za-z0-9._-]{0,252})"
                              % (r.host,))
        if r.nic is not None and not is_valid_nic_name(r.nic):
            raise LayoutError(field + ".nic", "%r is not a valid NIC name" % (r.nic,))
        if r.host not in used:
            hosts.append(r.host)
            used[r.host] = set()
            if len(hosts) > MAX_HOSTS:
                raise LayoutError("hosts", "more than %d hosts" % MAX_HOSTS)
        if r.gpu is not None:
            _check_int(field + ".gpu", r.gpu, 0, MAX_GPUS_PER_NODE - 1)
            if r.gpu in used[r.host]:
                raise LayoutError(field, "%s gpu %d is already used by another rank"
                                  % (r.host, r.gpu))
            used[r.host].add(r.gpu)
    placed = []
    for r in ranks:
        gpu = r.gpu
        if gpu is None:
            gpu = next(g for g in itertools.count() if g not in used[r.host])
            used[r.host].add(gpu)
        placed.append(r._replace(gpu=gpu))
    needed = max(max(len(g) for g in used.values()),
                 max(r.gpu for r in placed) + 1)
    if gpus_per_node is None:
        gpus_per_node = needed
    _check_int("gpus_per_node", gpus_per_node, 1, MAX_GPUS_PER_NODE)
    if gpus_per_node < needed:
        raise LayoutError("gpus_per_node",
                          "%d is less than the GPUs the ranks use on one host (%d)"
                          % (gpus_per_node, needed))
    entries = []
    for r in placed:
        entry = {"rank": r.rank, "host": r.host, "gpu": r.gpu}
        if r.nic is not None:
            entry["nic"] = r.nic
        entries.append(entry)
    doc = {"job": job, "gpus_per_node": gpus_per_node, "hosts": hosts,
           "ranks": entries}
    return _finish(doc, par, model, nvlink_domain)


def build_from_hosts(job, hosts, gpus_per_node, tp=1, pp=1, ep=1, cp=1,
                     order=None, rails=None, model=None, nvlink_domain=None):
    """A layout by formula: rank r on hosts[r // gpus_per_node]."""
    if not is_valid_job_name(job):
        raise LayoutError("job", "%r must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}" % (job,))
    _check_int("gpus_per_node", gpus_per_node, 1, MAX_GPUS_PER_NODE)
    hosts = list(hosts)
    if not hosts:
        raise LayoutError("hosts", "at least one host is needed")
    for i, h in enumerate(hosts):
        if not is_valid_node_name(h):
            raise LayoutError("hosts[%d]" % i, "%r is not a valid host name" % (h,))
    if len(set(hosts)) != len(hosts):
        raise LayoutError("hosts", "a host is listed twice")
    par = parallelism(len(hosts) * gpus_per_node, tp=tp, pp=pp, ep=ep, cp=cp,
                      order=order)
    doc = {"job": job, "gpus_per_node": gpus_per_node, "hosts": hosts}
    if rails is not None:
        rails = list(rails)
        if len(rails) != gpus_per_node:
            raise LayoutError("rails", "%d NICs given, but gpus_per_node = %d"
                              % (len(rails), gpus_per_node))
        for i, n in enumerate(rails):
            if not is_valid_nic_name(n):
                raise LayoutError("rails[%d]" % i, "%r is not a valid NIC name" % (n,))
        doc["rails"] = rails
    return _finish(doc, par, model, nvlink_domain)


def group_strides(order, degrees):
    """Rank distance between neighbours of each dimension's groups.

    Follows Megatron-LM's RankGenerator (and analysis/rank_generator.cc):
    dense groups use the order with ep = 1; the ep stride comes from the
    expert generator, which folds cp away and has dp*cp/ep expert replicas
    in dp's place. Used to recognise the order an initialised Megatron-LM
    job was built with from the groups it made.
    """
    dims = parse_order(order, degrees)
    dense = dict(degrees, ep=1)
    expert = dict(degrees, cp=1, dp=degrees["dp"] * degrees["cp"] // degrees["ep"])
    strides = {}
    for sizes, wanted in ((dense, ("tp", "cp", "dp", "pp")), (expert, ("ep",))):
        stride = 1
        for d in dims:
            if d in wanted:
                strides[d] = stride
            stride *= sizes[d]
    return strides


def infer_order(degrees, observed):
    """The order string whose groups have the observed strides, or None.

    `observed` maps a dimension to the rank distance inside its group (only
    dimensions of degree > 1 matter). Megatron-LM's default order and its
    `--use-tp-pp-dp-mapping` order are tried first, then every permutation.
    """
    candidates = [DEFAULT_ORDER, "tp-cp-ep-pp-dp"]
    candidates += ["-".join(p) for p in itertools.permutations(DIMS)]
    wanted = {d: s for d, s in observed.items() if degrees.get(d, 1) > 1}
    for order in candidates:
        strides = group_strides(order, degrees)
        if all(strides[d] == s for d, s in wanted.items()):
            return order
    return None
