"""Single-layer single-head attention (docs/theory.md §2): an abstract head and two activations."""

from ._head import ARRAY_FIELDS as ARRAY_FIELDS
from ._head import HEADS as HEADS
from ._head import AbstractHead as AbstractHead
from ._head import LinearHead as LinearHead
from ._head import SoftmaxHead as SoftmaxHead
from ._head import head_class as head_class
from ._head import init_head as init_head
from ._head import readout_prior_std as readout_prior_std
from ._head import trainable_filter as trainable_filter
from ._mask import causal_keys as causal_keys
from ._mask import target_weights as target_weights
from ._reduce import Reduction as Reduction
from ._reduce import copy_start as copy_start
from ._reduce import embedding_root as embedding_root
from ._reduce import expand_head as expand_head
from ._reduce import head_template as head_template
from ._reduce import init_reduced as init_reduced
from ._reduce import prior_root as prior_root
from ._reduce import realised_root as realised_root
from ._reduce import reduce_head as reduce_head
from ._reduce import reduced_head as reduced_head
from ._reduce import root_of as root_of
from ._reduce import wishart_root as wishart_root
