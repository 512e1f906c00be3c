"""``functorch_core.nn``: PyTorch-style modules that are pytrees, over the transforms.

Example::

    >>> import functorch_core as fc
    >>> from functorch_core import nn
    >>> model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> g = fc.grad(lambda m, x: m(x).sum())(model, np.ones((2, 3), np.float32))
    >>> g[0].weight.shape          # the gradient is module-shaped
    (8, 3)
"""

from . import functional, init, parallel, utils  # noqa: F401
from .activation import (  # noqa: F401
    ELU,
    GELU,
    SELU,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .attention import MultiheadAttention  # noqa: F401
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .conv import (  # noqa: F401
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from .dropout import Dropout, Dropout1d, Dropout2d  # noqa: F401
from .embedding import Embedding, EmbeddingBag  # noqa: F401
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten  # noqa: F401
from .loss import (  # noqa: F401
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
    TripletMarginLoss,
)
from .module import Module, Parameter  # noqa: F401
from .normalization import (  # noqa: F401
    BatchNorm1d,
    BatchNorm2d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    LayerNorm,
)
from .parallel import DistributedDataParallel, SyncBatchNorm  # noqa: F401
from .pooling import (  # noqa: F401
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell  # noqa: F401
from .stateless import (  # noqa: F401
    combine_state_for_ensemble,
    functional_call,
    make_functional,
    make_functional_with_buffers,
    replace_all_batch_norm_modules_,
    stack_module_state,
)
from .transformer import (  # noqa: F401
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .upsampling import Upsample  # noqa: F401
