"""How work runs: checkpoints and resume, the memory budget, devices, fan-out of groups.

- ``chunks``   ``run_chunked``: a list of chunks, each checkpointed next to the output and
               skipped on resume; ``checkpointed``: one piece of work kept under its
               fingerprint (``checkpointed_record``: as a JSON record); ``load_checkpoint``
- ``harness``  what every long run shares: ``claim`` (one writer per output, a killed write's
               temporary files removed; ``Claim.finish``: save, checkpoints removed, lock
               released), ``fingerprint``, ``Progress`` (a bar of real runs over the chunks)
- ``memory``   the sweep's and the sampler's memory model: bytes per run, the budget, runs per
               compiled chunk, the refusal of a run that alone does not fit
- ``devices``  the run axis sharded over the devices (``run_mesh``, ``shard_runs``, ``to_host``)
- ``fanout``   ``map_groups``: independent groups serially, in processes or on Dask;
               ``run_dependent``: jobs with dependencies
"""

from . import fanout as fanout
from .chunks import checkpointed as checkpointed
from .chunks import checkpointed_record as checkpointed_record
from .chunks import load_checkpoint as load_checkpoint
from .chunks import run_chunked as run_chunked
from .devices import run_mesh as run_mesh
from .devices import shard_runs as shard_runs
from .devices import to_host as to_host
from .fanout import GroupFailure as GroupFailure
from .fanout import failures as failures
from .fanout import map_groups as map_groups
from .fanout import run_dependent as run_dependent
from .harness import Claim as Claim
from .harness import Progress as Progress
from .harness import claim as claim
from .harness import fingerprint as fingerprint
from .memory import available_bytes as available_bytes
from .memory import check_memory as check_memory
from .memory import check_sampler_memory as check_sampler_memory
from .memory import chunk_size as chunk_size
from .memory import per_run_bytes as per_run_bytes
from .memory import refuse_if_over as refuse_if_over
