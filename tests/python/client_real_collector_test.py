"""fabricdiag.client.Lease (stdlib only) against the REAL
fabricdiag-collector with a token: the answers the module expects are the
ones the collector gives.

    client_real_collector_test.py COLLECTOR CLI

- declared (201), renewed (200: the expiry moves), deleted by stop();
- without the token: 401, state "refused", nothing declared;
- a layout the collector refuses (GPU out of range): 400, "refused";
- the layout deleted behind the lease's back: the next renewal gets 404
  and declares it again;
- the smallest lease the module allows (2 s) is accepted by the collector.

Faults a real collector cannot show (no answer, a 503) stay in
fabricdiag_unit_test.py with the fake. Every wait has a deadline; the
collector is stopped on the way out, also on failure.
"""

import os
import sys
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import torch_real_collector_test as real  # noqa: E402
from fabricdiag import client, layout  # noqa: E402
from fabricdiag_unit_test import two_hosts  # noqa: E402
from torch_real_collector_test import RealCollector, wait_for  # noqa: E402


class ClientRealCollectorTest(unittest.TestCase):
    def setUp(self):
        self.c = RealCollector()
        self.addCleanup(self.c.close)
        self.doc = layout.build_from_ranks("job-1", two_hosts(), tp=2, pp=2, ep=2)

    def lease(self, lease=3, token_file="default", doc=None):
        if token_file == "default":
            token_file = self.c.token_file
        cfg = client.Config(collector=self.c.url, token_file=token_file, lease=lease, timeout=5)
        lz = client.Lease(client.Client(cfg), doc or self.doc, lease)
        self.addCleanup(lz.stop, False)
        return lz

    def test_declare_renew_delete(self):
        lz = self.lease()
        lz.start()
        self.assertTrue(lz.wait_declared(10), lz.last_status)
        self.assertEqual(lz.last_status, 201)
        entry = self.c.listed()["job-1"]
        self.assertEqual(entry["source"], "python")
        first = entry["expires"]
        self.assertTrue(wait_for(lambda: self.c.listed()["job-1"]["expires"] > first, 8),
                        "renewals did not move the expiry")
        self.assertGreaterEqual(lz.renewals, 1)
        lz.stop()
        self.assertNotIn("job-1", self.c.listed())

    def test_without_token_refused(self):
        lz = self.lease(token_file=None)
        lz.start()
        self.assertFalse(lz.wait_declared(10))
        self.assertEqual((lz.state, lz.last_status), ("refused", 401))
        self.assertNotIn("job-1", self.c.listed())

    def test_bad_layout_refused(self):
        lz = self.lease(doc=dict(self.doc, gpus_per_node=4))  # GPUs 4..7 out of range
        lz.start()
        self.assertFalse(lz.wait_declared(10))
        self.assertEqual((lz.state, lz.last_status), ("refused", 400))
        self.assertNotIn("job-1", self.c.listed())

    def test_deleted_behind_its_back_declared_again(self):
        lz = self.lease(lease=2)  # the module's minimum; the collector takes it
        lz.start()
        self.assertTrue(lz.wait_declared(10), lz.last_status)
        req = urllib.request.Request(self.c.url + "/api/v1/jobs/job-1", method="DELETE",
                                     headers={"Authorization": "Bearer " + real.TOKEN})
        with urllib.request.urlopen(req, timeout=10) as r:
            self.assertEqual(r.status, 200)
        t0 = time.monotonic()
        self.assertTrue(wait_for(lambda: lz.puts >= 2 and "job-1" in self.c.listed(), 10),
                        "not declared again after a 404 renewal")
        print("\ndeclared again %.1f s after the delete" % (time.monotonic() - t0),
              file=sys.stderr)
        lz.stop()
        self.assertNotIn("job-1", self.c.listed())


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: client_real_collector_test.py COLLECTOR CLI")
    real.COLLECTOR, real.CLI = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
