"""The trained-embedding studies (docs/theory.md §2d-§2f): do the embeddings move, and what does
the posterior do with them.

- ``gram``       how far trained embeddings moved: the Gram change per block, the bound on Adam's
                 move
- ``joint_map``  the joint MAP (embeddings trained) started from a quenched fit moved along the
                 scale gauge, solved exactly with the joint reduction's split
- ``posterior``  the posterior with every weight sampled, embeddings included, exactly reduced to
                 width D: log density, prior draws, NUTS chains
- ``runs``       one Adam run's Gram trace (``adam_trace``) and one NUTS run's summary
                 (``embedded_nuts``)
"""

from .gram import adam_step_bound as adam_step_bound
from .gram import gram_change as gram_change
from .joint_map import joint_from_quenched as joint_from_quenched
from .joint_map import lowest_start as lowest_start
from .joint_map import order_arrays as order_arrays
from .joint_map import quenched_as_joint as quenched_as_joint
from .joint_map import rebalance as rebalance
from .posterior import embedded_energy as embedded_energy
from .posterior import prior_scales as prior_scales
from .runs import adam_trace as adam_trace
from .runs import embedded_nuts as embedded_nuts
