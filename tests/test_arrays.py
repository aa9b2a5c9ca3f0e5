"""``arrays.unique`` answers exactly what ``np.unique`` answers, counted or sorted."""

from __future__ import annotations

import numpy as np
import pytest

from tb_roofline_plugin import arrays


def _same(keys: np.ndarray) -> None:
    for asked in [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]:
        mine = arrays.unique(keys, *map(bool, asked))
        numpy = np.unique(keys, *map(bool, asked))
        mine = mine if isinstance(mine, tuple) else (mine,)
        numpy = numpy if isinstance(numpy, tuple) else (numpy,)
        assert len(mine) == len(numpy)
        for a, b in zip(mine, numpy):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b)


@pytest.mark.parametrize(
    "keys",
    [
        np.array([5, 3, 5, 0, 3, 3, 9], np.int64),
        np.array([-4, 7, -4, 2], np.int64),
        np.array([2**40, 2**40 + 3, 2**40], np.int64),  # offset, dense
        np.array([0, 2**62, 5], np.int64),  # sparse: np.unique
        np.array([7], np.int32),
        np.array([3, 1, 3], np.uint64),
        np.array([], np.int64),
        np.array([1.5, 0.5, 1.5]),  # floats: np.unique
    ],
)
def test_unique_equals_numpy_on_edge_cases(keys):
    _same(keys)


def test_unique_equals_numpy_on_two_million_small_keys():
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 5000, 2_000_000)
    _same(keys)
    distinct, first, inverse, counts = arrays.unique(keys, True, True, True)
    assert distinct[inverse[123]] == keys[123]
    assert keys[first[10]] == distinct[10] and not (keys[: first[10]] == distinct[10]).any()
    assert counts.sum() == len(keys)
