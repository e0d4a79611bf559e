"""Single-layer single-head attention (THEORY.md §2): an abstract head and two activations."""

from ._head import AbstractHead as AbstractHead
from ._head import LinearHead as LinearHead
from ._head import SoftmaxHead as SoftmaxHead
from ._head import head_class as head_class
from ._head import init_head as init_head
from ._head import trainable_filter as trainable_filter
