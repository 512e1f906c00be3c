"""``functorch_core.nn.functional``: PyTorch's functional layer API over the traced NumPy."""

from .activation import (  # noqa: F401
    elu,
    gelu,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from .attention import scaled_dot_product_attention  # noqa: F401
from .conv import adaptive_avg_pool2d, avg_pool2d, conv1d, conv2d, max_pool2d  # noqa: F401
from .linear import batch_norm, dropout, embedding, layer_norm, linear, one_hot  # noqa: F401
from .loss import (  # noqa: F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
    triplet_margin_loss,
)
