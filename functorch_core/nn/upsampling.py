"""``Upsample``: :func:`~functorch_core.nn.functional.interpolate` as a module."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["Upsample"]


class Upsample(Module):
    """Resize ``(N, C, *spatial)`` inputs, as ``torch.nn.Upsample``.

    Args:
        size (int or tuple, optional): the output's spatial size.
        scale_factor (float or tuple, optional): the spatial multiplier (give one of
            ``size`` and ``scale_factor``).
        mode (str): ``'nearest'``, ``'nearest-exact'``, ``'linear'``, ``'bilinear'`` or
            ``'trilinear'``. Default ``'nearest'``.
        align_corners (bool, optional): for the linear modes. Default ``False``.
        recompute_scale_factor (bool, optional): as in ``interpolate``.

    Example::

        >>> Upsample(scale_factor=2, mode='bilinear')(np.ones((1, 1, 2, 3))).shape
        (1, 1, 4, 6)
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size = tuple(size) if isinstance(size, list) else size
        self.scale_factor = tuple(float(s) for s in scale_factor) \
            if isinstance(scale_factor, tuple | list) else \
            (float(scale_factor) if scale_factor is not None else None)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode,
                             self.align_corners, self.recompute_scale_factor)

    def extra_repr(self):
        what = f"scale_factor={self.scale_factor}" if self.scale_factor is not None \
            else f"size={self.size}"
        return f"{what}, mode={self.mode!r}"
