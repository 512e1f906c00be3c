"""A module's state: ``state_dict`` and ``load_state_dict`` under PyTorch's dotted keys."""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class ModuleState:
    """The state methods of :class:`~functorch_core.nn.Module`."""

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An ``OrderedDict`` of parameters and persistent buffers under PyTorch's dotted
        keys (the arrays themselves, not copies; ``keep_vars`` is accepted and ignored)."""
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".")
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copy ``state_dict``'s arrays into the parameters and buffers, in place.

        Args:
            state_dict (Mapping[str, array]): dotted keys as ``state_dict()`` gives them
                (a PyTorch checkpoint converted with ``.numpy()`` loads as is).
            strict (bool): whether missing or unexpected keys are an error. Default ``True``.

        Returns:
            ``NamedTuple(missing_keys, unexpected_keys)``.

        Raises:
            RuntimeError: PyTorch's message listing missing/unexpected keys and every shape
            mismatch; nothing is copied then.
        """
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, target in own.items():
            if k in state_dict:
                shape = np.shape(state_dict[k])
                if shape != target.shape:
                    errors.append(f"size mismatch for {k}: copying a param with shape {shape} "
                                  f"from checkpoint, the shape in current model is "
                                  f"{target.shape}.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t"
                               + "\n\t".join(errors))
        for k, target in own.items():
            if k in state_dict:
                np.copyto(target, np.asarray(state_dict[k]), casting="unsafe")
        return _IncompatibleKeys(missing, unexpected)
