"""Unit tests of the fabricdiag Python package against a strict fake collector.

Hermetic (loopback only, no torch needed: declare() is driven through a
fake torch module). Run: python3 tests/python/fabricdiag_unit_test.py
"""

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)

from fabricdiag import client, layout, megatron  # noqa: E402
import fabricdiag.torch as fdtorch  # noqa: E402
from fake_collector import FakeCollector, refused_url, validate, Invalid  # noqa: E402

R = layout.RankInfo


def two_hosts(nic=True):
    # Node ranks shuffled: node rank 0 is gpu-b, and gpu-b's local GPUs run
    # backwards, so nothing follows name or index order.
    out = []
    for r in range(16):
        host = "gpu-b" if r < 8 else "gpu-a"
        gpu = 7 - r % 8 if host == "gpu-b" else r % 8
        out.append(R(r, host, gpu, "mlx5_%d" % gpu if nic else None))
    return out


class CaptureLog:
    """Collects the `fabricdiag` logger's records."""

    def __init__(self):
        self.records = []
        self._handler = logging.Handler()
        self._handler.emit = self.records.append

    def __enter__(self):
        logger = logging.getLogger("fabricdiag")
        logger.addHandler(self._handler)
        logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc):
        logging.getLogger("fabricdiag").removeHandler(self._handler)

    def messages(self, level=logging.WARNING):
        return [r.getMessage() for r in self.records if r.levelno >= level]


class LayoutTest(unittest.TestCase):
    def test_explicit_ranks_exact_map(self):
        doc = layout.build_from_ranks("job-1", reversed(two_hosts()), tp=2, pp=2, ep=2)
        self.assertEqual(doc["parallelism"], {"tp": 2, "pp": 2, "dp": 4, "cp": 1, "ep": 2})
        self.assertEqual(doc["hosts"], ["gpu-b", "gpu-a"])  # by first rank, not by name
        self.assertEqual(doc["gpus_per_node"], 8)
        self.assertEqual(doc["ranks"][0], {"rank": 0, "host": "gpu-b", "gpu": 7, "nic": "mlx5_7"})
        self.assertEqual(doc["ranks"][9], {"rank": 9, "host": "gpu-a", "gpu": 1, "nic": "mlx5_1"})
        validate("job-1", doc)  # the fake collector accepts it

    def test_nic_omitted_when_unknown(self):
        doc = layout.build_from_ranks("j", two_hosts(nic=False))
        self.assertNotIn("nic", doc["ranks"][3])
        self.assertEqual(doc["parallelism"]["dp"], 16)

    def test_unknown_gpu_gets_next_free_index(self):
        ranks = [R(0, "h", None, None), R(1, "h", 0, None), R(2, "h", None, None)]
        doc = layout.build_from_ranks("j", ranks)
        self.assertEqual([r["gpu"] for r in doc["ranks"]], [1, 0, 2])
        self.assertEqual(doc["gpus_per_node"], 3)

    def test_sparse_gpu_indices_set_gpus_per_node(self):
        doc = layout.build_from_ranks("j", [R(0, "h", 4, None), R(1, "h", 6, None)])
        self.assertEqual(doc["gpus_per_node"], 7)

    def test_errors_name_the_field(self):
        cases = [
            (dict(tp=3), "parallelism"),
            (dict(ep=3), "parallelism.ep"),
            (dict(tp=0), "parallelism.tp"),
            (dict(tp=2.0), "parallelism.tp"),
            (dict(tp=True), "parallelism.tp"),
            (dict(order="tp-xx"), "parallelism.order"),
            (dict(order="tp-dp", tp=2, pp=2), "parallelism.order"),
            (dict(order="tp-tp-dp"), "parallelism.order"),
            (dict(model={"experts": 3}, ep=2), "model.experts"),
            (dict(model={"bogus": 1}), "model.bogus"),
            (dict(nvlink_domain=3), "nvlink_domain"),
        ]
        for kwargs, field in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(layout.LayoutError) as cm:
                    layout.build_from_ranks("j", two_hosts(), **kwargs)
                self.assertEqual(cm.exception.field, field)

    def test_bad_placements(self):
        with self.assertRaises(layout.LayoutError) as cm:
            layout.build_from_ranks("j", [R(0, "h", 0, None), R(1, "h", 0, None)])
        self.assertEqual(cm.exception.field, "ranks[1]")
        with self.assertRaises(layout.LayoutError) as cm:
            layout.build_from_ranks("j", [R(0, "bad host", 0, None)])
        self.assertEqual(cm.exception.field, "ranks[0].host")
        with self.assertRaises(layout.LayoutError) as cm:
            layout.build_from_ranks("j", [R(0, "h", 0, None), R(2, "h", 1, None)])
        self.assertEqual(cm.exception.field, "ranks[1].rank")
        with self.assertRaises(layout.LayoutError) as cm:
            layout.build_from_ranks("bad job!", [R(0, "h", 0, None)])
        self.assertEqual(cm.exception.field, "job")

    def test_build_from_hosts(self):
        doc = layout.build_from_hosts("j", ["a", "b"], 8, tp=8, rails=["mlx5_%d" % i
                                                                      for i in range(8)])
        self.assertEqual(doc["parallelism"]["dp"], 2)
        validate("j", doc)
        with self.assertRaises(layout.LayoutError) as cm:
            layout.build_from_hosts("j", ["a", "b"], 8, rails=["mlx5_0"])
        self.assertEqual(cm.exception.field, "rails")

    def test_job_names(self):
        self.assertEqual(layout.job_name_from_env({"SLURM_JOB_ID": "4711"}), "slurm-4711")
        self.assertEqual(layout.job_name_from_env(
            {"SLURM_JOB_ID": "12", "TORCHELASTIC_RUN_ID": "x"}), "slurm-12")
        self.assertEqual(layout.job_name_from_env({"TORCHELASTIC_RUN_ID": "none"}), None)
        self.assertEqual(layout.job_name_from_env({"TORCHELASTIC_RUN_ID": "ab/c d"}), "ab-c-d")
        self.assertEqual(layout.job_name_from_env({"PBS_JOBID": "17.server"}), "pbs-17.server")
        self.assertEqual(layout.job_name_from_env({"FABRICDIAG_JOB": "mine",
                                                   "SLURM_JOB_ID": "1"}), "mine")
        self.assertIsNone(layout.job_name_from_env({}))
        self.assertEqual(layout.sanitize_job_name("__x" + "y" * 80), "x" + "y" * 63)
        self.assertIsNone(layout.sanitize_job_name("___"))
        self.assertIsNone(layout.sanitize_job_name("é"))
        for raw in ("a b", "é1", "-lead", "x" * 100):
            name = layout.sanitize_job_name(raw)
            self.assertTrue(layout.is_valid_job_name(name), name)

    def test_infer_order(self):
        deg = {"tp": 2, "cp": 1, "ep": 2, "dp": 4, "pp": 2}
        self.assertEqual(layout.infer_order(deg, {"tp": 1, "dp": 2, "pp": 8, "ep": 2}),
                         "tp-cp-ep-dp-pp")
        # Megatron-LM's --use-tp-pp-dp-mapping (only valid with ep = 1 when
        # pp > 1: the expert layers must see the same pipeline groups).
        self.assertEqual(layout.infer_order(dict(deg, ep=1), {"tp": 1, "pp": 2, "dp": 4}),
                         "tp-cp-ep-pp-dp")
        self.assertIsNone(layout.infer_order(deg, {"tp": 3}))


class FakeMegatron:
    """Injects a fake megatron.core.parallel_state with the real API's names."""

    def __init__(self, tp, pp, cp, ep, dp, order_strides, initialized=True):
        ps = types.ModuleType(megatron.MODULE)
        ps.model_parallel_is_initialized = lambda: initialized
        ps.get_tensor_model_parallel_world_size = lambda: tp
        ps.get_pipeline_model_parallel_world_size = lambda: pp
        ps.get_context_parallel_world_size = lambda: cp
        ps.get_expert_model_parallel_world_size = lambda: ep
        ps.get_expert_tensor_parallel_world_size = lambda: tp
        ps.get_data_parallel_world_size = lambda: dp
        s = order_strides
        # This rank's group members, as Megatron-LM keeps them (pipeline
        # ranks may be a list of lists).
        ps._TENSOR_MODEL_PARALLEL_GLOBAL_RANKS = [0, s["tp"]] if "tp" in s else [0]
        ps._PIPELINE_GLOBAL_RANKS = [[0, s["pp"]]] if "pp" in s else [0]
        ps._DATA_PARALLEL_GLOBAL_RANKS = [0, s["dp"]] if "dp" in s else [0]
        ps._CONTEXT_PARALLEL_GLOBAL_RANKS = [0]
        ps._EXPERT_MODEL_PARALLEL_RANKS = [0, s["ep"]] if "ep" in s else [0]
        self.module = ps

    def __enter__(self):
        sys.modules[megatron.MODULE] = self.module
        return self.module

    def __exit__(self, *exc):
        sys.modules.pop(megatron.MODULE, None)


class MegatronTest(unittest.TestCase):
    def test_not_imported_or_not_initialized(self):
        sys.modules.pop(megatron.MODULE, None)
        self.assertIsNone(megatron.read())
        with FakeMegatron(2, 2, 1, 2, 4, {}, initialized=False):
            self.assertIsNone(megatron.read())

    def test_sizes_and_default_order(self):
        with FakeMegatron(2, 2, 1, 2, 4, {"tp": 1, "dp": 2, "pp": 8, "ep": 2}):
            self.assertEqual(megatron.read(), {"tp": 2, "pp": 2, "cp": 1, "ep": 2,
                                               "order": "tp-cp-ep-dp-pp"})

    def test_tp_pp_dp_mapping_order(self):
        with FakeMegatron(2, 2, 1, 1, 4, {"tp": 1, "pp": 2, "dp": 4}):
            self.assertEqual(megatron.read()["order"], "tp-cp-ep-pp-dp")

    def test_broken_module_is_logged(self):
        with FakeMegatron(2, 2, 1, 2, 4, {}) as ps, CaptureLog() as cap:
            def boom():
                raise RuntimeError("not like this")
            ps.get_tensor_model_parallel_world_size = boom
            self.assertIsNone(megatron.read())
            self.assertIn("not like this", " ".join(cap.messages()))


class LeaseTest(unittest.TestCase):
    def setUp(self):
        self.doc = layout.build_from_ranks("job-1", two_hosts(), tp=2, pp=2, ep=2)

    def lease(self, url, lease=3, token_file=None, timeout=0.5):
        cfg = client.Config(collector=url, token_file=token_file, lease=lease, timeout=timeout)
        lz = client.Lease(client.Client(cfg), self.doc, lease)
        self.addCleanup(lz.stop, False)
        return lz

    def test_put_renew_delete(self):
        with FakeCollector() as fc:
            lz = self.lease(fc.url)
            lz.start()
            self.assertTrue(lz.wait_declared(2))
            put = fc.requests("PUT")
            self.assertEqual(len(put), 1)
            self.assertEqual(put[0].path, "/api/v1/jobs/job-1")
            self.assertEqual(put[0].body["source"], "python")
            self.assertEqual(put[0].body["lease_seconds"], 3)
            self.assertIn("@", put[0].body["owner"])
            self.assertNotIn("Authorization", put[0].headers)
            self.assertTrue(fc.wait_for(lambda: len(fc.requests("POST")) >= 2, 5))
            self.assertEqual(fc.requests("POST")[0].path, "/api/v1/jobs/job-1/renew")
            self.assertEqual(fc.requests("POST")[0].body, {"lease_seconds": 3})
            lz.stop()
            self.assertEqual([r.path for r in fc.requests("DELETE")], ["/api/v1/jobs/job-1"])
            self.assertIsNone(fc.layout("job-1"))
            n = len(fc.requests("POST"))
            time.sleep(1.5)  # one renewal period: none may follow the stop
            self.assertEqual(len(fc.requests("POST")), n)

    def test_token_sent(self):
        with FakeCollector(token="s3cret") as fc, tempfile.NamedTemporaryFile("w") as f:
            f.write("s3cret\n")
            f.flush()
            lz = self.lease(fc.url, token_file=f.name)
            lz.start()
            self.assertTrue(lz.wait_declared(2))
            self.assertEqual(fc.requests("PUT")[0].headers["Authorization"], "Bearer s3cret")

    def test_empty_token_file_logged(self):
        with FakeCollector(token="s3cret") as fc, tempfile.NamedTemporaryFile("w") as f, \
                CaptureLog() as cap:
            lz = self.lease(fc.url, token_file=f.name)
            lz.start()
            self.assertFalse(lz.wait_declared(2))
            self.assertTrue(any("is empty" in m for m in cap.messages()), cap.messages())
            self.assertNotIn("Authorization", fc.requests("PUT")[0].headers)

    def test_401_without_token_logged_once_and_no_retry(self):
        with FakeCollector(token="s3cret") as fc, CaptureLog() as cap:
            lz = self.lease(fc.url, token_file="/nonexistent/token")
            lz.start()
            self.assertFalse(lz.wait_declared(2))
            self.assertEqual(lz.state, "refused")
            msgs = cap.messages()
            self.assertTrue(any("/nonexistent/token" in m for m in msgs), msgs)
            self.assertTrue(any("requires a token" in m for m in msgs), msgs)
            time.sleep(1.3)
            self.assertEqual(len(fc.requests("PUT")), 1)

    def test_400_logged_with_the_field(self):
        self.doc = dict(self.doc, gpus_per_node=4)  # GPUs 4..7 are out of range
        with FakeCollector() as fc, CaptureLog() as cap:
            lz = self.lease(fc.url)
            lz.start()
            self.assertFalse(lz.wait_declared(2))
            self.assertEqual(lz.state, "refused")
            self.assertTrue(any("ranks[" in m and ".gpu" in m for m in cap.messages()),
                            cap.messages())

    def test_collector_down_logged_once_then_recovers(self):
        url = refused_url()
        with CaptureLog() as cap:
            lz = self.lease(url)
            t0 = time.monotonic()
            lz.start()
            self.assertFalse(lz.wait_declared(2))
            self.assertLess(time.monotonic() - t0, 1.0)
            time.sleep(2.3)  # two more attempts
            warnings = [m for m in cap.messages() if "unreachable" in m]
            self.assertEqual(len(warnings), 1, warnings)

    def test_recovers_when_collector_comes_back(self):
        fc = FakeCollector()
        fc.forced["PUT"] = (503, {"error": "starting"})
        with CaptureLog() as cap:
            lz = self.lease(fc.url)
            lz.start()
            self.assertFalse(lz.wait_declared(1))
            del fc.forced["PUT"]
            self.assertTrue(fc.wait_for(lambda: lz.state == "declared", 5))
            self.assertTrue(any("declared again" in m for m in cap.messages(logging.INFO)))
        fc.close()

    def test_slow_collector_bounded(self):
        with FakeCollector(mode="hang") as fc:
            lz = self.lease(fc.url, timeout=0.5)
            t0 = time.monotonic()
            lz.start()
            self.assertFalse(lz.wait_declared(1.0))
            self.assertLess(time.monotonic() - t0, 1.3)
            t0 = time.monotonic()
            lz.stop()  # joins for <= timeout, deletes for <= timeout + 0.5
            self.assertLess(time.monotonic() - t0, 2.0)

    def test_404_on_renew_redeclares(self):
        with FakeCollector() as fc:
            lz = self.lease(fc.url)
            lz.start()
            self.assertTrue(lz.wait_declared(2))
            with fc._lock:
                fc.layouts.clear()  # as a collector restarted without state
            self.assertTrue(fc.wait_for(lambda: len(fc.requests("PUT")) == 2, 5))
            self.assertIsNotNone(fc.layout("job-1"))

    def test_bad_environment_values(self):
        with CaptureLog() as cap:
            cfg = client.Config.from_env({"FABRICDIAG_COLLECTOR": "ftp://x",
                                          "FABRICDIAG_LEASE": "soon",
                                          "FABRICDIAG_TIMEOUT": "-1"})
        self.assertIsNone(cfg.collector)
        self.assertEqual(cfg.lease, client.DEFAULT_LEASE)
        self.assertEqual(cfg.timeout, client.DEFAULT_TIMEOUT)
        self.assertEqual(len(cap.messages()), 3)
        cfg = client.Config.from_env({"FABRICDIAG_COLLECTOR": "collector-1:9812/",
                                      "FABRICDIAG_LEASE": "60"})
        self.assertEqual(cfg.collector, "http://collector-1:9812")
        self.assertEqual(cfg.lease, 60)

    def test_labels_from_the_environment_travel_with_the_layout(self):
        cfg = client.Config.from_env({"FABRICDIAG_LABELS": "team=ml-infra, project=llama"})
        self.assertEqual(cfg.labels, {"team": "ml-infra", "project": "llama"})
        with FakeCollector() as fc:
            cfg.collector, cfg.lease, cfg.timeout = fc.url, 3, 0.5
            lz = client.Lease(client.Client(cfg), self.doc, 3)
            self.addCleanup(lz.stop, False)
            lz.start()
            self.assertTrue(lz.wait_declared(2))
            self.assertEqual(fc.requests("PUT")[0].body["labels"],
                             {"team": "ml-infra", "project": "llama"})
        for bad, says in (("Team=x", "'Team=x' is not KEY=VALUE"), ("team", "is not KEY=VALUE"),
                          ("team=", "team: the value"), ("team=a,team=b", "team given twice"),
                          ("team=" + "v" * 129, "team: the value"),
                          (",".join("k%d=v" % i for i in range(17)), "17 labels exceed")):
            with self.assertRaises(ValueError) as e:
                client.parse_labels(bad)
            self.assertIn(says, str(e.exception))
        # Bad labels are logged and left out: the job is declared without.
        with CaptureLog() as cap:
            cfg = client.Config.from_env({"FABRICDIAG_LABELS": "Team=x"})
        self.assertEqual(cfg.labels, {})
        self.assertTrue(any("FABRICDIAG_LABELS" in m for m in cap.messages()), cap.messages())

    def test_https_with_ca_file(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        p = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                            "-addext", "subjectAltName=IP:127.0.0.1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, "openssl (scripts/install-deps.sh): " + p.stderr)
        with FakeCollector(tls=(cert, key)) as fc:
            self.assertTrue(fc.url.startswith("https://"))
            cfg = client.Config(collector=fc.url, ca_file=cert, lease=3, timeout=2)
            lz = client.Lease(client.Client(cfg), self.doc, 3)
            self.addCleanup(lz.stop, False)
            lz.start()
            self.assertTrue(lz.wait_declared(5), lz.stats())
            # Without the CA the certificate is not trusted: logged, not raised.
            with CaptureLog() as cap:
                lz2 = self.lease(fc.url, timeout=2)
                lz2.start()
                self.assertFalse(lz2.wait_declared(5))
            self.assertTrue(any("CERTIFICATE_VERIFY_FAILED" in m or "certificate" in m
                                for m in cap.messages()), cap.messages())

    def test_https_with_missing_ca_file_does_not_raise(self):
        with CaptureLog() as cap:
            c = client.Client(client.Config(collector="https://127.0.0.1:1",
                                            ca_file="/nonexistent/ca.pem"))
        self.assertTrue(any("FABRICDIAG_CA_FILE" in m for m in cap.messages()))
        with self.assertRaises(client.Unreachable):
            c.delete("j")


class FakeTorch:
    """A torch module for declare(): `world` ranks whose other ranks'
    contributions are given; this process is rank `rank`."""

    def __init__(self, others, rank=0, initialized=True):
        torch = types.ModuleType("torch")
        dist = types.SimpleNamespace()
        dist.is_available = lambda: True
        dist.is_initialized = lambda: initialized
        dist.get_world_size = lambda group=None: len(others)
        dist.get_rank = lambda group=None: rank
        self.gathers = 0

        def all_gather_object(out, obj, group=None):
            self.gathers += 1
            for i, o in enumerate(others):
                out[i] = obj if i == rank else o
        dist.all_gather_object = all_gather_object
        torch.distributed = dist
        torch.cuda = types.SimpleNamespace(is_available=lambda: False)
        self.module = torch

    def __enter__(self):
        self.saved = sys.modules.get("torch")
        sys.modules["torch"] = self.module
        return self

    def __exit__(self, *exc):
        if self.saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved


class DeclareTest(unittest.TestCase):
    def env(self, url, **extra):
        env = {"FABRICDIAG_COLLECTOR": url, "FABRICDIAG_NODE": "gpu-b", "LOCAL_RANK": "7",
               "FABRICDIAG_NIC": "mlx5_7", "FABRICDIAG_LEASE": "3", "FABRICDIAG_TIMEOUT": "0.5",
               "SLURM_JOB_ID": "4711"}
        env.update(extra)
        return env

    def tearDown(self):
        fdtorch.stop()

    def test_rank0_declares_exact_layout(self):
        with FakeCollector() as fc, FakeTorch([tuple(r) for r in two_hosts()]):
            lz = fdtorch.declare(tp=2, pp=2, ep=2, env=self.env(fc.url))
            self.assertEqual(lz.state, "declared")
            doc = fc.layout("slurm-4711")
            self.assertEqual(doc["hosts"], ["gpu-b", "gpu-a"])
            self.assertEqual([(r["rank"], r["host"], r["gpu"], r.get("nic")) for r in doc["ranks"]],
                             [tuple(r) for r in two_hosts()])
            fdtorch.stop()
            self.assertIsNone(fc.layout("slurm-4711"))

    def test_other_ranks_do_nothing(self):
        with FakeCollector() as fc, FakeTorch([tuple(r) for r in two_hosts()], rank=5) as ft:
            self.assertIsNone(fdtorch.declare(tp=2, env=self.env(fc.url)))
            self.assertEqual(ft.gathers, 1)
            self.assertEqual(fc.requests(), [])

    def test_argument_errors_raise_before_the_gather(self):
        with FakeTorch([tuple(r) for r in two_hosts()]) as ft:
            for kwargs in (dict(tp=3), dict(ep=3), dict(order="tp-zz"), dict(job="no spaces"),
                           dict(model={"experts": 3}, ep=2)):
                with self.subTest(kwargs=kwargs), self.assertRaises(ValueError):
                    fdtorch.declare(env=self.env("http://127.0.0.1:1"), **kwargs)
            self.assertEqual(ft.gathers, 0)

    def test_megatron_sizes_without_arguments(self):
        with FakeCollector() as fc, FakeTorch([tuple(r) for r in two_hosts()]), \
                FakeMegatron(2, 2, 1, 2, 4, {"tp": 1, "dp": 2, "pp": 8, "ep": 2}):
            fdtorch.declare(env=self.env(fc.url))
            par = fc.layout("slurm-4711")["parallelism"]
            self.assertEqual(par, {"tp": 2, "pp": 2, "dp": 4, "cp": 1, "ep": 2,
                                   "order": "tp-cp-ep-dp-pp"})

    def test_megatron_sizes_that_do_not_fit_are_logged(self):
        with FakeTorch([tuple(r) for r in two_hosts()]) as ft, CaptureLog() as cap, \
                FakeMegatron(3, 1, 1, 1, 5, {}):
            self.assertIsNone(fdtorch.declare(env=self.env("http://127.0.0.1:1")))
            self.assertEqual(ft.gathers, 0)
            self.assertTrue(any("Megatron-LM" in m for m in cap.messages()), cap.messages())

    def test_environment_problems_are_logged_not_raised(self):
        others = [tuple(r) for r in two_hosts()]
        others[3] = (3, "gpu-b", 0, None)  # GPU 0 of gpu-b twice
        with FakeCollector() as fc, CaptureLog() as cap, FakeTorch(others):
            self.assertIsNone(fdtorch.declare(env=self.env(fc.url)))
            self.assertTrue(any("already used" in m for m in cap.messages()), cap.messages())
        others = [tuple(r) for r in two_hosts()]
        others[2] = (2, "gpu-b.example.com/x", 5, None)  # FABRICDIAG_NODE not a host name
        with FakeCollector() as fc, CaptureLog() as cap, FakeTorch(others):
            self.assertIsNone(fdtorch.declare(env=self.env(fc.url)))
            self.assertTrue(any("ranks[2].host" in m for m in cap.messages()), cap.messages())
            self.assertEqual(fc.requests(), [])
        with CaptureLog() as cap, FakeTorch([tuple(r) for r in two_hosts()]):
            self.assertIsNone(fdtorch.declare(env=self.env("")))
            self.assertTrue(any("FABRICDIAG_COLLECTOR" in m for m in cap.messages()))
        others = [tuple(r) for r in two_hosts()]
        others[1] = None  # a rank that failed to describe itself
        with FakeCollector() as fc, CaptureLog() as cap, FakeTorch(others):
            self.assertIsNone(fdtorch.declare(env=self.env(fc.url)))
            self.assertEqual(fc.requests(), [])

    def test_collector_down_declare_is_fast(self):
        with FakeTorch([tuple(r) for r in two_hosts()]):
            t0 = time.monotonic()
            lz = fdtorch.declare(env=self.env(refused_url()))
            self.assertLess(time.monotonic() - t0, 1.0)
            self.assertEqual(lz.state, "pending")

    def test_slow_collector_declare_is_bounded(self):
        with FakeCollector(mode="hang") as fc, FakeTorch([tuple(r) for r in two_hosts()]):
            t0 = time.monotonic()
            fdtorch.declare(env=self.env(fc.url))  # timeout 0.5 s: waits <= 1.5 s
            self.assertLess(time.monotonic() - t0, 2.0)

    def test_single_process_without_init(self):
        with FakeCollector() as fc, FakeTorch([None], initialized=False):
            fdtorch.declare(env=self.env(fc.url, LOCAL_RANK="", FABRICDIAG_NIC="bad nic!"))
            doc = fc.layout("slurm-4711")
            self.assertEqual(doc["ranks"], [{"rank": 0, "host": "gpu-b", "gpu": 0}])

    def test_layout_deleted_at_interpreter_exit(self):
        script = (
            "import sys; sys.path.insert(0, %r)\n"
            "from fabricdiag import client, layout\n"
            "import fabricdiag.torch as t\n"
            "doc = layout.build_from_ranks('exit-job', [layout.RankInfo(0, 'h', 0, None)])\n"
            "lz = client.Lease(client.Client(client.Config(collector=%r, timeout=1)), doc, 30)\n"
            "lz.start(); assert lz.wait_declared(3)\n"
            "t._register_exit(lz)\n" % (os.path.join(REPO, "python"), "%s"))
        with FakeCollector() as fc:
            p = subprocess.run([sys.executable, "-c", script % fc.url], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual([r.path for r in fc.requests("DELETE")], ["/api/v1/jobs/exit-job"])

    def test_default_host_is_gethostname(self):
        import socket
        info = fdtorch.local_info(0, types.SimpleNamespace(
            cuda=types.SimpleNamespace(is_available=lambda: False)), {})
        self.assertEqual(info.host, socket.gethostname())
        self.assertIsNone(info.gpu)

    def test_cuda_visible_devices_mapping(self):
        cuda = types.SimpleNamespace(is_available=lambda: True, current_device=lambda: 0)
        t = types.SimpleNamespace(cuda=cuda)
        self.assertEqual(fdtorch.local_gpu(t, {"CUDA_VISIBLE_DEVICES": "5"}), 5)
        self.assertEqual(fdtorch.local_gpu(t, {"CUDA_VISIBLE_DEVICES": "GPU-abc"}), 0)
        self.assertEqual(fdtorch.local_gpu(t, {}), 0)


class CliTest(unittest.TestCase):
    def run_cli(self, *args, env=None):
        full = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        full.update(env or {})
        return subprocess.run([sys.executable, "-m", "fabricdiag"] + list(args), env=full,
                              capture_output=True, text=True, timeout=30)

    def test_print_and_invalid_input(self):
        p = self.run_cli("declare", "--job", "j", "--hosts", "a,b", "--gpus-per-node", "8",
                         "--tp", "8", "--print")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["parallelism"]["dp"], 2)
        p = self.run_cli("declare", "--job", "j", "--hosts", "a,b", "--gpus-per-node", "8",
                         "--ep", "3", "--print")
        self.assertEqual(p.returncode, 2)
        self.assertIn("parallelism.ep", p.stderr)

    def test_declare_hold_and_delete_on_sigterm(self):
        with FakeCollector() as fc:
            env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"),
                       FABRICDIAG_COLLECTOR=fc.url, FABRICDIAG_LEASE="3")
            p = subprocess.Popen([sys.executable, "-m", "fabricdiag", "declare", "--job", "demo",
                                  "--hosts", "a", "--gpus-per-node", "2", "--tp", "2"],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                self.assertTrue(fc.wait_for(lambda: fc.requests("POST"), 10))
                p.terminate()
                self.assertEqual(p.wait(10), 0)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                p.stdout.close()
                p.stderr.close()
            self.assertIsNone(fc.layout("demo"))
            p = self.run_cli("delete", "demo", env={"FABRICDIAG_COLLECTOR": fc.url})
            self.assertEqual(p.returncode, 0, p.stderr)
            p = self.run_cli("delete", "demo", env={"FABRICDIAG_COLLECTOR": refused_url()})
            self.assertEqual(p.returncode, 1)


class FakeCollectorTest(unittest.TestCase):
    """The fake must refuse what the collector refuses, or the tests above prove nothing."""

    def test_rejects(self):
        good = layout.build_from_ranks("j", two_hosts(), tp=2)
        bad = [
            dict(good, extra=1),
            dict(good, gpus_per_node="8"),
            dict(good, parallelism=dict(good["parallelism"], dp=3)),
            dict(good, ranks=good["ranks"][:-1]),
            dict(good, hosts=["gpu-a"]),
            dict(good, job="other"),
        ]
        for body in bad:
            with self.subTest(body=list(body)), self.assertRaises(Invalid):
                validate("j", body)
        validate("j", good)


if __name__ == "__main__":
    unittest.main(verbosity=2)
