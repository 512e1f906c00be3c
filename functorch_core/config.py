"""Global options, set by the user (never flipped by the library itself)."""

import os
from dataclasses import dataclass


@dataclass
class Config:
    """Options of functorch_core.

    Attributes:
        log_retraces: log, through the ``functorch_core.jit`` logger, why a
            jitted function traces again (which argument's shape, dtype,
            structure or static value changed). Default: the environment
            variable ``FUNCTORCH_CORE_LOG_RETRACES`` is ``1``.
    """

    log_retraces: bool = os.environ.get("FUNCTORCH_CORE_LOG_RETRACES", "") == "1"


config = Config()
