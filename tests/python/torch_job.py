"""A small PyTorch training job for torch_declare_test.py.

16 CPU processes (gloo) forked by torch.multiprocessing pose as 2 hosts of
8 GPUs: node rank 0 calls itself gpu-b and node rank 1 gpu-a (so host order
is not name order), and LOCAL_RANK runs backwards on gpu-b. Each rank calls
fabricdiag.torch.declare(tp=2, pp=2, ep=2) and then "trains" (all-reduces)
for --seconds, or with --until FILE until that file exists (rank 0 looks and
tells the others through the all-reduce, so every rank runs the same steps),
or with --hang blocks for ever after declaring (the test kills it with
SIGKILL). Each rank writes OUT/rank-N.json with the time
declare() took; rank 0 adds its lease thread's statistics at exit.

    python3 torch_job.py --out DIR --port P [--seconds S | --until FILE | --hang]
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import fabricdiag.torch  # noqa: E402

WORLD = 16
HOSTS = {0: "gpu-b", 1: "gpu-a"}  # node rank -> FABRICDIAG_NODE


def placement(rank):
    node = rank // 8
    local = rank % 8
    return HOSTS[node], (7 - local if node == 0 else local)


def worker(rank, args):
    host, local = placement(rank)
    os.environ.update(FABRICDIAG_NODE=host, LOCAL_RANK=str(local), RANK=str(rank),
                      WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(args.port), GLOO_SOCKET_IFNAME="lo")
    if rank % 8 == 3:
        os.environ["FABRICDIAG_NIC"] = "mlx5_%d" % local  # one NIC known per host
    dist.init_process_group("gloo", rank=rank, world_size=WORLD,
                            timeout=__import__("datetime").timedelta(seconds=60))
    t0 = time.perf_counter()
    lease = fabricdiag.torch.declare(tp=2, pp=2, ep=2)
    took = time.perf_counter() - t0
    out = os.path.join(args.out, "rank-%d.json" % rank)
    with open(out, "w") as f:
        json.dump(dict(lease.stats() if lease else {}, rank=rank, declare_seconds=took), f)
    if args.hang:
        while True:
            time.sleep(3600)
    # The same number of steps on every rank (a deadline per rank would
    # leave some ranks in an all-reduce the others never join).
    t = torch.ones(1024)
    if args.until:
        # A step every 0.25 s: light on a small, busy machine.
        steps = 0
        flag = torch.zeros(1)
        while True:
            steps += 1
            flag.fill_(1.0 if rank == 0 and os.path.exists(args.until) else 0.0)
            dist.all_reduce(flag)
            if flag[0].item() > 0:
                break
            time.sleep(0.25)
    else:
        steps = max(1, int(args.seconds / 0.05))
        for _ in range(steps):
            dist.all_reduce(t)
            t.fill_(1.0)
            time.sleep(0.05)
    dist.barrier()
    if lease is not None:
        stats = dict(lease.stats(), rank=rank, declare_seconds=took, steps=steps)
        with open(out, "w") as f:
            json.dump(stats, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--until", help="train until this file exists")
    p.add_argument("--hang", action="store_true")
    args = p.parse_args()
    # fork: the 16 ranks share the parent's already imported torch instead
    # of importing it 16 times on a small machine.
    mp.start_processes(worker, args=(args,), nprocs=WORLD, start_method="fork", join=True)


if __name__ == "__main__":
    main()
