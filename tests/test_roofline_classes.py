"""Which ops the roofline judges (``roofline.classes``), and the advice's number wording."""

from __future__ import annotations

import numpy as np
import pytest

from tb_roofline_plugin.render.advice import advice_lines, duration_text, percent_text
from tb_roofline_plugin.roofline.classes import (
    ASYNC_COPY,
    COMMUNICATION,
    CONTAINER,
    HOST_TRANSFER,
    JUDGED,
    NO_COST_MODEL,
    op_class,
    roofline_classes,
)


@pytest.mark.parametrize(
    ("name", "category", "expected"),
    [
        ("all-reduce.7", "all-reduce", COMMUNICATION),
        ("all-gather-start.2", "all-gather", COMMUNICATION),
        ("reduce-scatter", "", COMMUNICATION),
        ("collective-permute-done.1", "", COMMUNICATION),
        ("all-to-all.3", "", COMMUNICATION),
        ("send.1", "", COMMUNICATION),
        ("recv-done.4", "", COMMUNICATION),
        ("fusion.12", "all-reduce fusion", COMMUNICATION),
        ("ncclKernel_AllReduce_RING_LL_Sum_float", "", COMMUNICATION),
        ("ncclDevKernel_AllGather_RING_LL", "", COMMUNICATION),
        ("rcclGenericKernel", "", COMMUNICATION),
        ("record_param_comms", "communication (NCCL)", COMMUNICATION),
        ("c10d::allreduce_", "other", COMMUNICATION),
        ("nccl:all_reduce", "other", COMMUNICATION),
        ("copy-start.4", "copy-start", ASYNC_COPY),
        ("copy-done", "copy-done", ASYNC_COPY),
        ("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", ASYNC_COPY),
        ("infeed.1", "infeed", HOST_TRANSFER),
        ("outfeed.11", "outfeed", HOST_TRANSFER),
        ("while.8", "while", CONTAINER),
        ("fusion.3", "convolution fusion", JUDGED),
        ("broadcast_add_fusion.1", "loop fusion", JUDGED),  # not a collective's "broadcast_"
        ("send_buffer_fusion", "loop fusion", JUDGED),  # "send" only as an instruction name
        ("aten::mm", "matmul", JUDGED),
        ("aten::copy_", "memory copy", JUDGED),  # a device copy kernel moves bytes: judged
    ],
)
def test_each_class_by_op_name_and_category(name, category, expected):
    assert op_class(name, category) == expected


def test_an_op_without_flops_and_bytes_has_no_cost_model_but_a_collective_stays_one():
    classes = roofline_classes(
        ["fusion.1", "custom-call.2", "transpose.3", "all-reduce.4"],
        ["loop fusion", "custom-call", "data formatting", "all-reduce"],
        np.array([5.0, 0.0, 0.0, 0.0]),
        np.array([0.0, 0.0, 7.0, 0.0]),
    )
    assert classes.tolist() == [JUDGED, NO_COST_MODEL, JUDGED, COMMUNICATION]


@pytest.mark.parametrize(
    ("fraction", "text"),
    [
        (0.4213, "42%"),
        (0.035, "3.5%"),
        (0.03, "3%"),
        (0.0035, "0.35%"),
        (6.523e-7, "< 0.01%"),
        (1_924_470.55, "> 1,000%"),
        (0.0, "0%"),
        (-0.0, "0%"),
    ],
)
def test_percentages_have_no_exponents_or_absurd_digits(fraction, text):
    assert percent_text(fraction) == text


@pytest.mark.parametrize(
    ("us", "text"),
    [(850.0, "850 µs"), (1_800.0, "1.8 ms"), (2_310_000.0, "2.31 s"), (77_773_215.7, "77.8 s")],
)
def test_durations_are_scaled_to_their_unit(us, text):
    assert duration_text(us) == text


def test_the_answer_names_judged_ops_and_puts_collectives_apart():
    # Device time 1,000 µs: a fusion at 50% of its roof for 400 µs wastes 200 µs (20%);
    # an all-reduce of 300 µs (30%) is communication, never ranked.
    lines = advice_lines(
        names=["all-reduce.1", "fusion.2"],
        module_ids=["1", "1"],
        categories=["all-reduce", "loop fusion"],
        bound_by=["HBM", "HBM"],
        efficiency=np.array([0.05, 0.5]),
        wasted_us=np.array([0.0, 200.0]),
        wasted_rank=np.array([0, 1]),
        self_time_us=np.array([300.0, 400.0]),
        classes=[COMMUNICATION, JUDGED],
        dtypes=["bf16", "bf16"],
        device_time_us=1000.0,
        memory="HBM",
        peaks_known=True,
    )
    assert [line["kind"] for line in lines] == ["op", "unjudged"]
    assert lines[0]["hlo_name"] == "fusion.2"
    assert (
        "HBM-bound at 50% of its roof; up to 200 µs to gain (20% of device time)"
        in (lines[0]["text"])
    )
    assert lines[1]["text"].startswith(
        "30% of device time is communication, not judged by the roofline: communication 30% "
        "(bound by the interconnect)"
    )


def _top_wasted(path) -> tuple[str, str]:
    from tb_roofline_plugin.ops.selection import TOTAL, select
    from tb_roofline_plugin.platforms.analysis import analyze_file
    from tb_roofline_plugin.render.export import op_details, selection_model

    stats = analyze_file(path)
    selection = select(stats, TOTAL)
    details = op_details(selection_model(stats, selection), stats, selection)
    top = next(d for d in details if d["wasted_time_rank"] == 1)
    return top["hlo_name"], top["roofline_class"]


def test_the_demo_training_runs_top_wasted_op_is_no_collective(tmp_path):
    from tb_roofline_plugin import demo

    demo.write_demo_logdir(tmp_path)
    (path,) = tmp_path.glob("train_v5p/plugins/profile/*/host0.xplane.pb")
    # Before: all-reduce.7 was first ("HBM-bound at 5 % of the roof; up to 9.389 ms to gain").
    assert _top_wasted(path) == ("fusion.3", JUDGED)


@pytest.mark.parametrize(
    ("relative", "first"),
    [
        ("pytorch/a100_recsys/control.pt.trace.json.gz", "aten::mm"),  # was record_param_comms
        ("xprof/tpu_inference_2.xplane.pb", "broadcast_add_fusion.1"),  # was copy-done.4
    ],
)
def test_real_profiles_top_wasted_op_is_judged(shared_data, relative, first):
    assert _top_wasted(shared_data / relative) == (first, JUDGED)
