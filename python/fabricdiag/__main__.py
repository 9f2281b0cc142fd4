"""python3 -m fabricdiag: declare or delete a layout from a script.

    python3 -m fabricdiag declare --job moe-42 --hosts gpu-000,gpu-001 \\
        --gpus-per-node 8 --tp 2 --ep 4 [--rails mlx5_0,...] [--lease 60]
    python3 -m fabricdiag delete moe-42

`declare` PUTs the layout, then keeps renewing its lease until SIGINT or
SIGTERM and deletes it (the way a training job does); with --once it
exits after the PUT and the layout expires with its lease. --print
prints the layout as JSON without contacting the collector.

Exit status as the fabricdiag CLI: 0 success, 1 the collector cannot be
reached or failed, 2 invalid input (the message names the field).
"""

import argparse
import json
import logging
import signal
import sys
import threading

from . import client, layout


def _list(value):
    return [v for v in value.split(",") if v] if value else None


def _parser():
    p = argparse.ArgumentParser(prog="python3 -m fabricdiag",
                                description="Declare a job's layout to the fabricdiag collector "
                                            "(FABRICDIAG_COLLECTOR, FABRICDIAG_TOKEN_FILE, "
                                            "FABRICDIAG_LEASE, FABRICDIAG_CA_FILE).")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("declare", help="declare a layout and keep its lease until interrupted")
    d.add_argument("--job", help="job name (default: the scheduler's job id)")
    d.add_argument("--hosts", required=True, help="comma-separated hosts in rank order")
    d.add_argument("--gpus-per-node", type=int, required=True)
    for dim in ("tp", "pp", "ep", "cp"):
        d.add_argument("--" + dim, type=int, default=1)
    d.add_argument("--order", help="Megatron-LM order string (default tp-cp-ep-dp-pp)")
    d.add_argument("--rails", help="comma-separated NIC of each local GPU")
    d.add_argument("--nvlink-domain", type=int)
    d.add_argument("--model", help="the model block as JSON, e.g. '{\"experts\": 64}'")
    d.add_argument("--once", action="store_true", help="exit after the PUT")
    d.add_argument("--print", action="store_true", help="print the layout, send nothing")
    x = sub.add_parser("delete", help="delete a job's layout")
    x.add_argument("job")
    return p


def _build(args):
    job = args.job or layout.job_name_from_env()
    if not job:
        raise layout.LayoutError("job", "no --job and no scheduler job id in the environment")
    model = None
    if args.model:
        try:
            model = json.loads(args.model)
        except ValueError as e:
            raise layout.LayoutError("model", "not JSON: %s" % e) from None
    return layout.build_from_hosts(job, _list(args.hosts), args.gpus_per_node, tp=args.tp,
                                   pp=args.pp, ep=args.ep, cp=args.cp, order=args.order,
                                   rails=_list(args.rails), model=model,
                                   nvlink_domain=args.nvlink_domain)


def _config():
    cfg = client.Config.from_env()
    if not cfg.collector:
        print("fabricdiag: FABRICDIAG_COLLECTOR is not set to an http(s):// URL", file=sys.stderr)
        sys.exit(2)
    return cfg


def _declare(args):
    try:
        doc = _build(args)
    except layout.LayoutError as e:
        print("fabricdiag: %s" % e, file=sys.stderr)
        return 2
    if args.print:
        print(json.dumps(doc, indent=1))
        return 0
    cfg = _config()
    lease = client.Lease(client.Client(cfg), doc, cfg.lease, source="python")
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    lease.start()
    lease.wait_declared(cfg.timeout + 1.0)
    if lease.state != "declared":
        lease.stop(delete=False)
        return 2 if lease.last_status == 400 else 1
    print("fabricdiag: declared %s (revision %s, lease %d s)" % (doc["job"], lease.revision,
                                                                 cfg.lease))
    if args.once:
        lease.stop(delete=False)
        return 0
    stopped.wait()
    lease.stop()
    return 0


def _delete(args):
    cfg = _config()
    try:
        resp = client.Client(cfg).delete(args.job)
    except client.Unreachable as e:
        print("fabricdiag: %s" % e, file=sys.stderr)
        return 1
    if resp.status != 200:
        print("fabricdiag: delete %s: %s" % (args.job, resp.error()), file=sys.stderr)
        return 2 if resp.status == 400 else 1
    print("fabricdiag: deleted %s" % args.job if resp.body.get("deleted", True)
          else "fabricdiag: %s was not declared" % args.job)
    return 0


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = _parser().parse_args(argv)
    return _declare(args) if args.command == "declare" else _delete(args)


if __name__ == "__main__":
    sys.exit(main())
