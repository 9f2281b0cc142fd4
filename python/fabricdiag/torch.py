"""Declares a PyTorch job's parallelism layout to the fabricdiag collector.

Call it on every rank, after torch.distributed.init_process_group (and,
with Megatron-LM, after initialize_model_parallel):

    import fabricdiag.torch
    fabricdiag.torch.declare(tp=8, pp=4, ep=8)

Each rank contributes its host (FABRICDIAG_NODE, default the host name, as
the agent's --node), its local GPU and its NIC (FABRICDIAG_NIC, else left
to the collector's GPU-NIC pairing); rank 0 gathers them, declares the
layout with explicit ranks and a lease, renews the lease from a daemon
thread and deletes the layout at normal interpreter exit. See
docs/integrations.md.

Errors: declare() raises ValueError (a LayoutError naming the field) or
TypeError only for its own arguments that no layout could satisfy (a
degree that does not divide the world size, an unknown order token, an
invalid explicit job name, a bad model block), on every rank alike and
before any collective, so no rank is left waiting. Everything that depends
on the environment (collector down or slow, refused layout, missing token,
bad FABRICDIAG_* values) is logged on the `fabricdiag` logger and declare()
returns normally.
"""

import atexit
import logging
import os
import socket
import time

from . import client, layout, megatron

log = logging.getLogger("fabricdiag")

_active = None  # the Lease of this process, if any


def local_gpu(torch_mod, env=None):
    """This rank's GPU index on its host, or None when unknown.

    The current CUDA device, mapped through CUDA_VISIBLE_DEVICES when that
    lists indices (a launcher that gives each process one GPU makes every
    process's current device 0); else LOCAL_RANK.
    """
    env = os.environ if env is None else env
    try:
        if torch_mod.cuda.is_available():
            device = int(torch_mod.cuda.current_device())
            visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
            if visible and device < len(visible) and visible[device].isdigit():
                return int(visible[device])
            return device
    except Exception as e:
        log.warning("fabricdiag: cannot read the current CUDA device (%s); using LOCAL_RANK", e)
    value = env.get("LOCAL_RANK", "").strip()
    return int(value) if value.isdigit() else None


def local_info(rank, torch_mod, env=None):
    """What this rank contributes to the gather: (rank, host, gpu, nic).

    host is FABRICDIAG_NODE or socket.gethostname(), the same default as
    the agent's --node (gethostname(2)). An invalid NIC name is logged and
    dropped; an invalid host name is kept (rank 0 reports it).
    """
    env = os.environ if env is None else env
    host = env.get("FABRICDIAG_NODE", "").strip() or socket.gethostname()
    nic = env.get("FABRICDIAG_NIC", "").strip() or None
    if nic is not None and not layout.is_valid_nic_name(nic):
        log.warning("fabricdiag: FABRICDIAG_NIC=%r is not a valid NIC name; leaving the NIC "
                    "to the collector", nic)
        nic = None
    return layout.RankInfo(rank, host, local_gpu(torch_mod, env), nic)


def _resolve(tp, pp, ep, cp, order):
    """Explicit arguments first, then Megatron-LM's state, then 1.

    Returns (degrees, order, whether Megatron-LM supplied any of them).
    """
    given = {"tp": tp, "pp": pp, "ep": ep, "cp": cp}
    used_megatron = False
    if any(v is None for v in given.values()) or order is None:
        mega = megatron.read()
        if mega is not None:
            for k in given:
                if given[k] is None:
                    given[k] = mega[k]
                    used_megatron = True
            if order is None and mega["order"] is not None:
                order = mega["order"]
                used_megatron = True
    return ({k: (1 if v is None else v) for k, v in given.items()}, order, used_megatron)


def declare(tp=None, pp=None, ep=None, cp=None, order=None, job=None, model=None,
            nvlink_domain=None, group=None, env=None, wait=None):
    """Declares this job's layout; returns rank 0's client.Lease, else None.

    tp, pp, ep, cp and order default to Megatron-LM's initialised parallel
    state, else to 1 and the collector's default order; dp is the world
    size / (tp*cp*pp). job defaults to the scheduler's id (SLURM_JOB_ID ->
    slurm-<id>, TORCHELASTIC_RUN_ID, ...). model is the layout's optional
    model block (docs/layout-format.md). group is the process group to
    gather over (default the world). env replaces os.environ (tests).

    Collective: every rank of `group` must call it. Bounded: after the
    gather, rank 0 waits at most `wait` seconds (default the HTTP timeout
    + 1 s) for the first PUT, the rest happens in a daemon thread.
    """
    import torch as torch_mod  # the real torch (absolute import)

    env = os.environ if env is None else env
    dist = torch_mod.distributed
    distributed = dist.is_available() and dist.is_initialized()
    world = dist.get_world_size(group) if distributed else 1
    rank = dist.get_rank(group) if distributed else 0

    # Argument checks, identical on every rank, before the collective.
    degrees, order, used_megatron = _resolve(tp, pp, ep, cp, order)
    try:
        layout.parallelism(world, order=order, **degrees)
    except layout.LayoutError as e:
        if not used_megatron:
            raise
        # Not the caller's arguments: e.g. a `group` smaller than the world
        # Megatron-LM's sizes describe. Every rank sees the same, so every
        # rank returns here and none waits in the gather.
        log.error("fabricdiag: Megatron-LM's parallel sizes do not fit this group (%s); "
                  "not declaring the job", e)
        return None
    if model is not None:
        layout.check_model(model, degrees["ep"])
    if job is not None and not layout.is_valid_job_name(job):
        raise layout.LayoutError("job", "%r must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}" % (job,))

    start = time.monotonic()
    try:
        info = local_info(rank, torch_mod, env)
    except Exception as e:  # never skip the collective: others would wait
        log.warning("fabricdiag: rank %d cannot describe itself (%s)", rank, e)
        info = None
    gathered = [info]
    if distributed:
        gathered = [None] * world
        try:
            dist.all_gather_object(gathered, info, group=group)
        except Exception as e:
            log.error("fabricdiag: gathering the ranks' placement failed (%s); "
                      "not declaring the job", e)
            return None
    if rank != 0:
        return None
    gathered_at = time.monotonic()
    try:
        lease = _declare_rank0(gathered, degrees, order, job, model, nvlink_domain, env, wait)
    except Exception:  # a bug of ours must not stop training
        log.exception("fabricdiag: declaring the job failed")
        return None
    if lease is not None:
        lease.gather_seconds = gathered_at - start
        lease.declare_seconds = time.monotonic() - start
    return lease


def _declare_rank0(gathered, degrees, order, job, model, nvlink_domain, env, wait):
    global _active
    missing = [i for i, g in enumerate(gathered) if g is None]
    if missing:
        log.error("fabricdiag: ranks %s could not describe themselves; not declaring the job",
                  missing[:10])
        return None
    ranks = [layout.RankInfo(*g) for g in gathered]
    job = job or layout.job_name_from_env(env)
    if job is None:
        job = layout.sanitize_job_name("torch-%s-%d" % (ranks[0].host, os.getpid()))
        log.info("fabricdiag: no scheduler job id (SLURM_JOB_ID, TORCHELASTIC_RUN_ID, ...); "
                 "declaring the job as %s", job)
    try:
        doc = layout.build_from_ranks(job, ranks, order=order, model=model,
                                      nvlink_domain=nvlink_domain, **degrees)
    except layout.LayoutError as e:
        log.error("fabricdiag: job %s: the ranks' placement is not a valid layout (%s); "
                  "check FABRICDIAG_NODE and the local GPU of each rank", job, e)
        return None
    cfg = client.Config.from_env(env)
    if not cfg.collector:
        if not env.get("FABRICDIAG_COLLECTOR"):
            log.warning("fabricdiag: FABRICDIAG_COLLECTOR is not set; not declaring job %s", job)
        return None
    if _active is not None:
        _active.stop()
    lease = client.Lease(client.Client(cfg), doc, cfg.lease)
    lease.start()
    _active = lease
    _register_exit(lease)
    lease.wait_declared(cfg.timeout + 1.0 if wait is None else wait)
    return lease


def _register_exit(lease):
    atexit.register(lease.stop)
    # Children started by multiprocessing (torch.multiprocessing.spawn) end
    # with os._exit, which skips atexit; its finalizers still run.
    try:
        import multiprocessing
        from multiprocessing import util
        if multiprocessing.parent_process() is not None:
            util.Finalize(lease, lease.stop, exitpriority=10)
    except Exception:
        pass


def stop():
    """Deletes the declared layout now (also done at interpreter exit)."""
    global _active
    if _active is not None:
        _active.stop()
        _active = None
