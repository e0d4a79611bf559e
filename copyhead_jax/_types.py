"""Array aliases named after docs/theory.md's symbols (shapes documented in the annotation)."""

from jaxtyping import Array, Float, Int

Scalar = Float[Array, ""]
#: an elementwise function's value: its inputs broadcast together (a scalar or any grid)
Broadcast = Float[Array, "*grid"]
Tokens = Int[Array, "L"]  # token index of each position, 0 <= t < V
OneHotSeq = Float[Array, "L V"]  # X: rows x^a are one-hot tokens
TargetSeq = Float[Array, "L V"]  # Y = G* X, y^a = x^{a-1}
TokenBatch = Int[Array, "P L"]
Mask = Float[Array, "P"]  # 1 for samples in the training set, 0 for padding
AttnMatrix = Float[Array, "L L"]  # A_ab: query a attends to key b
LogitMatrix = Float[Array, "L L"]  # s_ab (or the theory's G)
#: logits / attention weights of any batch of sequences (an activation acts on the last two axes)
LogitStack = Float[Array, "*batch L L"]
AttnStack = Float[Array, "*batch L L"]
Gram = Float[Array, "D D"]  # D = V + L feature space (tokens, positions)
