"""``functorch_core.nn.functional``: PyTorch's functional layer API over the traced NumPy."""

from .activation import (  # noqa: F401
    elu,
    gelu,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    mish,
    prelu,
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
from .conv import (  # noqa: F401
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from .distance import cosine_similarity, normalize, pairwise_distance  # noqa: F401
from .linear import (  # noqa: F401
    batch_norm,
    bilinear,
    dropout,
    dropout1d,
    dropout2d,
    embedding,
    embedding_bag,
    layer_norm,
    linear,
    one_hot,
)
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
from .normalization import group_norm, instance_norm  # noqa: F401
from .pooling import (  # noqa: F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from .vision import interpolate, pad, upsample  # noqa: F401
