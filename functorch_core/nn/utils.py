"""``torch.nn.utils``'s gradient clipping under its torch name: ``nn.utils.clip_grad_norm_``
is ``optim.clip_grad_norm_`` (in place, returns the norm); the functional forms are here
too."""

from ..optim.clip import clip_grad_norm, clip_grad_norm_, clip_grad_value, clip_grad_value_

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value", "clip_grad_value_"]
