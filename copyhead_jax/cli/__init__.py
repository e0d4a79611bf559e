"""The ``copyhead`` command: thin subcommands over the public API.

- ``main``            the entry point: ``build_parser``, ``main`` (the console script
                      ``copyhead = copyhead_jax.cli:main``)
- ``_common``         what the subcommands share: subparsers with examples, progress flags,
                      ``save_figure``
- ``console``         the package's warnings and progress notes as one line each on stderr
                      (``console``: the command's, and ``python -m experiments``'s)
- ``refusals``        a refusal names the flag as typed (``as_typed``: the API's field names
                      rewritten into the command's flags)
- ``flags``           one flag per config field (``config_from_args``, ``parse_P_grid``)
- ``tokens``          ``--tokens FILE.npy``: a user's own token sequences
- ``sweep``           ``copyhead sweep``
- ``results``         ``copyhead polish``, ``show``, ``plot`` of result files
- ``sample``          ``copyhead sample``
- ``llc``             ``copyhead llc``
- ``transition``      ``copyhead transition``, with ``transition_settings`` (what its flags ask
                      for), ``transition_folder`` (its output folder, the refusal of another
                      run's) and ``transition_text`` (what it prints)
- ``theory``          ``copyhead theory``, with ``theory_points`` (``points``, ``curve``,
                      ``landscape``, ``scaling``), ``theory_fit`` (``sensitivity``, ``fit``),
                      ``theory_beyond`` (the source and mask flags) and ``theory_options`` (the
                      shared parameter flags and output helpers)

``python -m copyhead_jax.cli ...`` runs the command. The face's ``main`` is the function (the
module is ``cli/main.py``).
"""

from .console import console as console
from .main import build_parser as build_parser
from .main import config_from_args as config_from_args
from .main import main as main
from .main import parse_P_grid as parse_P_grid
from .main import print_table as print_table
from .main import save_figure as save_figure
from .main import sweep_paths as sweep_paths
