#!/usr/bin/env python3
"""A stand-in training job: declares its layout the way rank 0 of a
PyTorch job does after fabricdiag.torch.declare's all_gather, without
torch, then "trains" (sleeps) until it is stopped.

    FABRICDIAG_COLLECTOR=http://127.0.0.1:9812 FABRICDIAG_LEASE=10 \\
    PYTHONPATH=python python3 python/examples/standin_job.py \\
        --job moe-train-42 --hosts gpu-000,gpu-001 --tp 8 --ep 2 \\
        [--rails mlx5_0,...,mlx5_7] [--model '{"experts": 16, ...}']

Every rank's (rank, host, local GPU, NIC) is what that rank would
contribute to the gather: rank r on host r // 8, GPU r % 8, NIC rails[r %
8]. The layout goes out with explicit `ranks` (layout.build_from_ranks),
source "python", and a lease renewed from the module's daemon thread
(client.Lease). SIGTERM or SIGINT ends the job normally: the layout is
deleted. SIGKILL leaves it to expire with its lease, as a crashed or
preempted job does (scripts/demo.sh shows both). Prints one line,
"declared JOB revision N", once the collector has it; exit 1 when the
collector cannot be reached or refuses the layout, 2 for bad arguments.
"""

import argparse
import json
import logging
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fabricdiag import client, layout  # noqa: E402  (path set just above)

GPUS_PER_NODE = 8


def _parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--job", required=True)
    p.add_argument("--hosts", required=True, help="comma-separated, in node-rank order")
    for dim in ("tp", "pp", "ep", "cp"):
        p.add_argument("--" + dim, type=int, default=1)
    p.add_argument("--rails", help="comma-separated NIC of each local GPU")
    p.add_argument("--model", help="the layout's model block as JSON")
    return p


def gathered(hosts, rails):
    """What all_gather_object hands rank 0: one RankInfo per rank."""
    return [layout.RankInfo(r, hosts[r // GPUS_PER_NODE], r % GPUS_PER_NODE,
                            rails[r % GPUS_PER_NODE] if rails else None)
            for r in range(len(hosts) * GPUS_PER_NODE)]


def main(argv=None):
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    args = _parser().parse_args(argv)
    hosts = [h for h in args.hosts.split(",") if h]
    rails = [n for n in args.rails.split(",") if n] if args.rails else None
    try:
        model = json.loads(args.model) if args.model else None
        if rails is not None and len(rails) != GPUS_PER_NODE:
            raise layout.LayoutError("rails", "%d NICs, expected %d" % (len(rails),
                                                                       GPUS_PER_NODE))
        doc = layout.build_from_ranks(args.job, gathered(hosts, rails), tp=args.tp,
                                      pp=args.pp, ep=args.ep, cp=args.cp, model=model)
    except (ValueError, layout.LayoutError) as e:
        print("standin_job: %s" % e, file=sys.stderr)
        return 2
    cfg = client.Config.from_env()
    if not cfg.collector:
        print("standin_job: FABRICDIAG_COLLECTOR is not set to an http(s):// URL",
              file=sys.stderr)
        return 2
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    lease = client.Lease(client.Client(cfg), doc, cfg.lease, source="python")
    lease.start()
    if not lease.wait_declared(cfg.timeout + 1.0):
        lease.stop(delete=False)
        return 1
    print("declared %s revision %s" % (args.job, lease.revision), flush=True)
    stopped.wait()  # training
    lease.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
