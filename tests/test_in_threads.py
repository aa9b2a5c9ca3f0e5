"""Work shared by threads comes back in order, errors in their turn; a TPU host's cores summed
in threads give the result of summing them one after the other."""

from __future__ import annotations

import threading

import pytest

from tb_roofline_plugin.demo import TpuSpec, tpu_xspace
from tb_roofline_plugin.platforms import tpu
from tb_roofline_plugin.platforms.analysis import analyze_bytes
from tb_roofline_plugin.platforms.in_threads import thread_map
from tb_roofline_plugin.render.export import render


def test_results_come_in_item_order_from_several_threads():
    seen: set[int] = set()

    def work(i: int) -> int:
        seen.add(threading.get_ident())
        return i * i

    assert thread_map(work, list(range(50)), threads=3) == [i * i for i in range(50)]
    assert thread_map(work, [], threads=3) == [] and thread_map(work, [7], threads=3) == [49]


def test_the_first_items_error_is_raised_after_all_are_done():
    done: list[int] = []

    def work(i: int) -> int:
        done.append(i)
        if i in (3, 6):
            raise ValueError(f"item {i}")
        return i

    with pytest.raises(ValueError, match="item 3"):
        thread_map(work, list(range(10)), threads=2)
    assert sorted(done) == list(range(10))


def test_a_hosts_cores_summed_in_threads_equal_one_after_the_other(monkeypatch):
    data = tpu_xspace(TpuSpec(cores=4, steps=8, ops_per_step=60, seed=5)).SerializeToString()
    monkeypatch.setattr(tpu, "THREADS_MIN_BYTES", 1 << 62)
    alone = render(analyze_bytes(data, "h.xplane.pb"), "json", ["h"])
    monkeypatch.setattr(tpu, "THREADS_MIN_BYTES", 0)
    assert render(analyze_bytes(data, "h.xplane.pb"), "json", ["h"]) == alone
