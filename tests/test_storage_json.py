"""JSON summaries (``copyhead_jax.storage``): arrays as lists, 7 significant digits, NaN as null
and back to NaN inside lists; written atomically."""

import json
import math

import jax.numpy as jnp
import numpy as np

from copyhead_jax.compare import locate as loc
from copyhead_jax.storage import jsonable, nulls_in_lists_to_nan, write_json


def test_jsonable_handles_nan_and_arrays():
    out = jsonable({"a": np.array([1.0, np.nan]), "b": np.float32(2.5), "c": jnp.ones(2)})
    assert out == {"a": [1.0, None], "b": 2.5, "c": [1.0, 1.0]}


def test_jsonable_keeps_seven_digits_and_plain_types():
    out = jsonable({1: (math.pi, np.int64(3), np.bool_(True), math.inf, "s", None)})
    assert out == {"1": [3.141593, 3, True, None, "s", None]}
    assert type(out["1"][1]) is int and type(out["1"][2]) is bool


def test_jsonable_writes_a_located_point_as_its_dict():
    p = loc.locate_level(np.array([1.0, 2.0, 4.0]), np.array([0.0, 0.4, 1.0]), 0.5)
    assert jsonable({"p": p}) == {"p": jsonable(p.to_dict())}
    assert jsonable(p)["P_star"] == float(f"{p.P_star:.7g}")


def test_write_json_round_trips_with_nan_restored_in_lists(tmp_path):
    path = write_json(tmp_path / "sub" / "r.json", {"x": np.array([1.0, np.nan]), "y": np.nan})
    assert not list(path.parent.glob("*.tmp"))
    back = nulls_in_lists_to_nan(json.loads(path.read_text()))
    assert back["y"] is None  # only list entries become NaN
    assert back["x"][0] == 1.0 and math.isnan(back["x"][1])
