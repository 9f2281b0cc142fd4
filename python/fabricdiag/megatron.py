"""Reads the parallelism of an initialised Megatron-LM job.

Only looks at `megatron.core.parallel_state` when the job already imported
it (sys.modules): a job that initialised Megatron-LM's model parallelism has
necessarily done so, and a job that did not must not pay for importing it.

Sizes come from the public getters (get_tensor_model_parallel_world_size,
get_pipeline_model_parallel_world_size, get_context_parallel_world_size,
get_expert_model_parallel_world_size). Megatron-LM keeps no getter for the
order string it was initialised with, so the order is recognised from the
rank distance inside this rank's groups (the lists Megatron-LM keeps of the
global ranks of each group), see layout.infer_order.
"""

import logging
import sys

from . import layout

log = logging.getLogger("fabricdiag")

MODULE = "megatron.core.parallel_state"

# Module attributes holding this rank's group members, per dimension.
_GROUP_RANKS = (
    ("tp", "_TENSOR_MODEL_PARALLEL_GLOBAL_RANKS"),
    ("cp", "_CONTEXT_PARALLEL_GLOBAL_RANKS"),
    ("dp", "_DATA_PARALLEL_GLOBAL_RANKS"),
    ("pp", "_PIPELINE_GLOBAL_RANKS"),
    ("ep", "_EXPERT_MODEL_PARALLEL_RANKS"),
)


def _size(ps, getter):
    fn = getattr(ps, getter, None)
    if fn is None:
        return 1
    return int(fn())


def _stride(members):
    # Pipeline ranks may be a list of lists (several pipeline groups).
    if members and isinstance(members[0], (list, tuple)):
        members = members[0]
    members = list(members or [])
    if len(members) < 2:
        return None
    return int(members[1]) - int(members[0])


def read():
    """{"tp", "pp", "cp", "ep", "order"} from Megatron-LM, or None.

    None when Megatron-LM is not imported or not initialised. "order" is
    None when it cannot be recognised (the collector's default then
    applies). Never raises: an unexpected Megatron-LM version is logged.
    """
    ps = sys.modules.get(MODULE)
    if ps is None:
        return None
    try:
        initialized = getattr(ps, "model_parallel_is_initialized", None)
        if initialized is None or not initialized():
            return None
        sizes = {
            "tp": _size(ps, "get_tensor_model_parallel_world_size"),
            "pp": _size(ps, "get_pipeline_model_parallel_world_size"),
            "cp": _size(ps, "get_context_parallel_world_size"),
            "ep": _size(ps, "get_expert_model_parallel_world_size"),
        }
        etp = getattr(ps, "get_expert_tensor_parallel_world_size", None)
        if etp is not None and int(etp()) != sizes["tp"]:
            log.warning("fabricdiag: Megatron-LM's expert tensor parallelism (%d) differs from "
                        "its tensor parallelism (%d); fabricdiag models experts with the latter",
                        int(etp()), sizes["tp"])
        observed = {}
        for dim, attr in _GROUP_RANKS:
            stride = _stride(getattr(ps, attr, None))
            if stride is not None:
                observed[dim] = stride
        sizes["order"] = None
        world = None
        dp_getter = getattr(ps, "get_data_parallel_world_size", None)
        if dp_getter is not None:
            world = sizes["tp"] * sizes["cp"] * sizes["pp"] * int(dp_getter())
        if world is not None and observed:
            degrees = {"tp": sizes["tp"], "cp": sizes["cp"], "pp": sizes["pp"],
                       "ep": sizes["ep"], "dp": world // (sizes["tp"] * sizes["cp"] * sizes["pp"])}
            if (degrees["dp"] * degrees["cp"]) % degrees["ep"] == 0:
                sizes["order"] = layout.infer_order(degrees, observed)
        if sizes["order"] is None:
            log.info("fabricdiag: cannot recognise Megatron-LM's order; assuming %s "
                     "(pass order= to declare() to say otherwise)", layout.DEFAULT_ORDER)
        return sizes
    except Exception as e:
        log.warning("fabricdiag: cannot read Megatron-LM's parallel state (%s: %s); "
                    "pass tp=, pp=, cp=, ep= to declare()", type(e).__name__, e)
        return None
