"""Frozen, validated configs: what one sweep, solver or sampler needs.

- ``sections``  ``Config`` and its sections (``TaskConfig``, ``ModelConfig``, ``PosteriorConfig``,
                ``TrainConfig``, ``SweepConfig``), the choices (``ATTENTIONS``, ...)
- ``solvers``   the MAP solver's settings: ``AdamConfig``, ``ExactConfig``, ``AutoConfig``
- ``samplers``  the posterior sampler's settings: ``SGLDConfig``, ``HMCConfig``
- ``health``    the chain-health thresholds, one ``Mixing`` record per purpose (``MIXING``)
- ``presets``   ``PAPER``, ``PAPER_MAP``, ``SMALL``, ``TINY`` and the shorthands ``PLAIN``,
                ``PAPER_CHI_LIK``; the readings ``READINGS``; ``preset(name, reading=None)``
"""

from .health import BETWEEN_STARTS as BETWEEN_STARTS
from .health import FINAL as FINAL
from .health import HMC_RUN as HMC_RUN
from .health import MIXING as MIXING
from .health import PROFILE_WINDOW as PROFILE_WINDOW
from .health import SGLD_RUN as SGLD_RUN
from .health import TRANSITION_RUN as TRANSITION_RUN
from .health import Mixing as Mixing
from .presets import DEFAULT_PRESET as DEFAULT_PRESET
from .presets import PAPER as PAPER
from .presets import PAPER_CHI_LIK as PAPER_CHI_LIK
from .presets import PAPER_MAP as PAPER_MAP
from .presets import PLAIN as PLAIN
from .presets import PRESETS as PRESETS
from .presets import READINGS as READINGS
from .presets import SHORTHANDS as SHORTHANDS
from .presets import SMALL as SMALL
from .presets import TINY as TINY
from .presets import preset as preset
from .presets import reading_of as reading_of
from .presets import run_name as run_name
from .presets import with_reading as with_reading
from .samplers import DEFAULT_CHAINS as DEFAULT_CHAINS
from .samplers import SAMPLERS as SAMPLERS
from .samplers import STARTS as STARTS
from .samplers import HMCConfig as HMCConfig
from .samplers import Rounds as Rounds
from .samplers import SGLDConfig as SGLDConfig
from .sections import ATTENTIONS as ATTENTIONS
from .sections import BOTH as BOTH
from .sections import LIKELIHOODS as LIKELIHOODS
from .sections import LINEAR_SCALES as LINEAR_SCALES
from .sections import Config as Config
from .sections import ModelConfig as ModelConfig
from .sections import PosteriorConfig as PosteriorConfig
from .sections import SweepConfig as SweepConfig
from .sections import TaskConfig as TaskConfig
from .sections import TrainConfig as TrainConfig
from .solvers import ADAM_FIELDS as ADAM_FIELDS
from .solvers import EXACT_FIELDS as EXACT_FIELDS
from .solvers import SOLVERS as SOLVERS
from .solvers import AdamConfig as AdamConfig
from .solvers import AutoConfig as AutoConfig
from .solvers import ExactConfig as ExactConfig
from .solvers import exact_settings as exact_settings
from .solvers import single_start as single_start
