"""fabricdiag: declare a training job's parallelism layout to the collector.

    import fabricdiag.torch
    fabricdiag.torch.declare(tp=8, pp=4, ep=8)

fabricdiag.layout builds layout documents and fabricdiag.client talks to
the collector's HTTP write API; neither needs torch. See
docs/integrations.md.
"""

__version__ = "0.2.0"  # the project version (CMakeLists.txt)
