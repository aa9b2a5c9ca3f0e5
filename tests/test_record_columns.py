"""The columnar records (``RecordSet``) against the protobuf records they stand for, and the
column-wise renderers against ``json.dumps`` / csv of the dict forms."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiny_tpu import tiny_tpu

from tb_roofline_plugin.ops.op_metrics import OpMetricsDb, empty_columns
from tb_roofline_plugin.ops.selection import select
from tb_roofline_plugin.peaks.perf_env import PerfEnv
from tb_roofline_plugin.platforms.analysis import analyze_profile
from tb_roofline_plugin.protos import roofline_model_pb2
from tb_roofline_plugin.render import datatable as datatable_module
from tb_roofline_plugin.render.datatable import csv_text, datatable_text, to_csv, to_datatable
from tb_roofline_plugin.render.export import (
    complete_json_text,
    database_dict,
    message_to_dict,
    op_details,
    record_dicts,
    selection_model,
    to_json,
)
from tb_roofline_plugin.roofline.formulas import DatabasePeaks
from tb_roofline_plugin.roofline.model import RooflineModel, roofline_model
from tb_roofline_plugin.roofline.records import (
    UINT64_MAX,
    RecordSet,
    _category_mask,
    op_records,
    program_record_pair,
    program_records,
    uint64_costs,
)
from tb_roofline_plugin.xspace.profile_reader import decode_profile

ENV = PerfEnv(peak_tera_flops_per_second=1.0, peak_bws_gbps=[1.0, 0, 0, 0, 0, 0, 0])
PEAKS = DatabasePeaks.from_env(ENV, "TPU")


def _ops() -> OpMetricsDb:
    """Three ops: a source with file and line, one with only line 0, one without source."""
    cols = empty_columns(3)
    cols["program_id"][:] = [7, 7, 2**63 + 5]
    cols["name"][:] = ["conv", "fusion", "infeed.1"]
    cols["category"][:] = ["convolution", "loop fusion", "infeed"]
    cols["occurrences"][:] = [2, 1, 3]
    cols["time_ps"][:] = [4_000_000, 1_000_000, 3_000_000]
    cols["self_time_ps"][:] = [4_000_000, 1_000_000, 3_000_000]
    cols["flops"][:] = [8e6, 2.0**70, 0.0]
    cols["bytes_accessed"][:] = [1e3, 5e5, -1.0]
    cols["source_file"][:] = ["model.py", "", ""]
    cols["source_line"][:] = [12, 0, -1]
    cols["source_stack"][:] = ["train\nstep", "", ""]
    return OpMetricsDb(**cols, total_time_ps=10_000_000)


def test_uint64_costs_truncate_zero_the_unusable_and_saturate():
    values = [np.nan, np.inf, -np.inf, -1.0, 0.0, 0.5, 1.9, 2.0**63, 2.0**64, 1e30]
    assert uint64_costs(np.array(values)).tolist() == [
        0,
        0,
        0,
        0,
        0,
        0,
        1,
        2**63,
        UINT64_MAX,
        UINT64_MAX,
    ]


def test_op_record_columns_are_ranked_by_self_time_with_uint64_costs():
    records = op_records(
        _ops(), PEAKS, 1, include=True, record_type=roofline_model_pb2.PER_STEP, step_num=4
    )
    assert records["hlo_name"].tolist() == ["conv", "infeed.1", "fusion"]
    assert records["rank"].tolist() == [1, 2, 3]
    assert records["step_num"].tolist() == [4, 4, 4]
    assert records["flops"].tolist() == [8_000_000, 0, UINT64_MAX]
    assert records["bytes_accessed"].tolist() == [1000, 0, 500_000]
    assert records["hlo_module_id"].tolist() == [7, 2**63 + 5, 7]
    assert records["total_self_time_as_fraction"].tolist() == pytest.approx([0.4, 0.3, 0.1])
    assert records["cumulative_total_self_time_as_fraction"].tolist() == pytest.approx(
        [0.4, 0.7, 0.8]
    )
    assert records["has_source_info"].tolist() == [True, False, True]
    without_io = op_records(_ops(), PEAKS, 1, include=False)
    assert without_io["hlo_name"].tolist() == ["conv", "fusion"]
    assert without_io["rank"].tolist() == [1, 2]
    assert without_io["step_num"].tolist() == [0, 0]  # only PER_STEP records have one


def test_record_columns_equal_the_fields_of_their_messages():
    records = op_records(
        _ops(), PEAKS, 2, include=True, record_type=roofline_model_pb2.PER_STEP, step_num=4
    )
    messages = records.to_messages()
    for name, values in records.columns.items():
        if name.startswith("source_") or name == "has_source_info":
            continue
        got = [getattr(m, name) for m in messages]
        assert got == values.tolist(), name
    conv, infeed, fusion = messages
    assert conv.source_info.file_name == "model.py" and conv.source_info.line_number == 12
    assert conv.source_info.stack_frame == "train\nstep"
    assert not infeed.HasField("source_info")
    # Line 0 of no file is still a known source (XProf's test is line >= 0), with no fields.
    assert fusion.HasField("source_info") and message_to_dict(fusion)["source_info"] == {}
    assert all(m.HasField("step_num") and m.step_num == 4 for m in messages)
    assert RecordSet.from_messages(messages) == records


def test_program_records_rank_zero_and_step_num_only_per_step():
    ops = _ops()
    records = program_records(
        [ops, ops],
        PEAKS,
        1,
        True,
        [roofline_model_pb2.AVERAGE_STEP, roofline_model_pb2.PER_STEP],
        [7, 9],
        [2, 1],
    )
    assert records["hlo_name"].tolist() == ["Program", "Program"]
    assert records["rank"].tolist() == [0, 0]
    assert records["step_num"].tolist() == [0, 9]
    assert records["total_time_in_us"].tolist() == [5.0, 10.0]  # the average divides
    assert records["total_self_time_as_fraction"].tolist() == [0.0, 0.0]
    average, step = records.to_messages()
    assert not average.HasField("step_num") and step.step_num == 9
    assert not average.HasField("source_info")


def _without_infeed(ops: OpMetricsDb) -> OpMetricsDb:
    """``ops`` with its infeed an ordinary fusion (no row leaving infeed out changes)."""
    category = ops.category.copy()
    category[2] = "loop fusion"
    return OpMetricsDb(**{**vars(ops), "category": category})


@pytest.mark.parametrize("with_infeed", [True, False])
def test_program_record_pair_is_program_records_of_both_flags(with_infeed):
    """Summed once where infeed/outfeed changes nothing, twice where it does: either way
    the records, to the bit, of program_records with include_infeed_outfeed true and false."""
    ops = _ops() if with_infeed else _without_infeed(_ops())
    other = OpMetricsDb(**{**vars(ops), "time_ps": ops.time_ps * 3, "total_time_ps": 9e7})
    args = ([ops, other], PEAKS, 1)
    rest = ([roofline_model_pb2.AVERAGE_STEP, roofline_model_pb2.PER_STEP], [0, 4], [2, 1])
    pair = program_record_pair(*args, *rest)
    want = [program_records(*args, include, *rest) for include in (True, False)]
    assert pair[0] == want[0] and pair[1] == want[1]
    assert pair[1]["include_infeed_outfeed"].tolist() == [False, False]
    # The infeed (3 us, 9 us in the other) is left out of the Program only where it is one;
    # the average divides by its 2 steps.
    left_out = want[0]["total_time_in_us"] - want[1]["total_time_in_us"]
    assert left_out.tolist() == ([1.5, 9.0] if with_infeed else [0.0, 0.0])


def test_record_dicts_are_message_to_dict_of_the_messages():
    records = RecordSet.concat(
        [
            program_records([_ops()], PEAKS, 1, True, [roofline_model_pb2.PER_STEP], [3], [1]),
            op_records(_ops(), PEAKS, 1, True, roofline_model_pb2.PER_STEP, 3),
            op_records(_ops(), PEAKS, 1, False),
        ]
    )
    assert len(records) == 6
    assert record_dicts(records) == [message_to_dict(m) for m in records.to_messages()]


def test_category_mask_tests_each_distinct_category():
    seen = []

    def test(category: str) -> bool:
        seen.append(category)
        return "feed" in category

    categories = np.array(["infeed", "loop", "infeed", "outfeed", "loop"], object)
    assert _category_mask(categories, test).tolist() == [True, False, True, True, False]
    assert sorted(seen) == ["infeed", "loop", "outfeed"]
    assert _category_mask(np.zeros(0, object), test).tolist() == []


@pytest.fixture(scope="module")
def tiny_stats():
    return analyze_profile(decode_profile(tiny_tpu().SerializeToString()), "tiny")


def test_database_message_round_trips_through_the_model(tiny_stats):
    model = roofline_model(tiny_stats)
    database = model.database()
    assert len(database.roofline_model_record) == len(model.records) > 0
    assert database_dict(model) == message_to_dict(database)
    again = RooflineModel.from_database(database)
    assert again.records == model.records and again.header == model.header


def test_column_wise_texts_equal_json_dumps_of_the_dict_forms(tiny_stats):
    model = roofline_model(tiny_stats)
    database = model.database()
    assert datatable_text(model) == json.dumps(to_datatable(database))
    assert csv_text(model) == to_csv(to_datatable(database))
    selection = select(tiny_stats, "total")
    for indent in (None, 1):
        expected = json.dumps(to_json(database, tiny_stats, ["a.pb"], selection), indent=indent)
        assert complete_json_text(model, tiny_stats, ["a.pb"], selection, indent) == expected


@pytest.mark.parametrize("rows_per_piece", [1, 7])
def test_texts_written_in_pieces_equal_the_whole(tiny_stats, monkeypatch, rows_per_piece):
    model = roofline_model(tiny_stats)
    database = model.database()
    assert len(model.records) > 7
    monkeypatch.setattr(datatable_module, "ROWS_PER_PIECE", rows_per_piece)
    assert datatable_text(model) == json.dumps(to_datatable(database))
    assert csv_text(model) == to_csv(to_datatable(database))


def test_op_details_of_the_model_and_of_its_message_agree(tiny_stats):
    selection = select(tiny_stats, "total")
    model = selection_model(tiny_stats, selection)
    details = op_details(model, tiny_stats, selection)
    assert details == op_details(model.database(), tiny_stats, selection)
    assert [d["rank"] for d in details] == list(range(1, len(details) + 1))
    # Ranked: the ops the roofline judges (1..n); the others (collectives, copies, ...) 0.
    judged = [d for d in details if d["roofline_class"] == "compute/memory"]
    assert 0 < len(judged) < len(details)
    assert sorted(d["wasted_time_rank"] for d in judged) == list(range(1, len(judged) + 1))
    assert {d["wasted_time_rank"] for d in details if d not in judged} == {0}
    assert {d["wasted_time_us"] for d in details if d not in judged} == {0.0}
    wasted = [d["wasted_time_us"] for d in sorted(judged, key=lambda d: d["wasted_time_rank"])]
    assert wasted == sorted(wasted, reverse=True)


@pytest.mark.parametrize(
    "text", ["", "model.py", "a<b>&\"c\"'d'", "&#x27; &amp; &lt;", "<'>" * 3, "é\u2028\n"]
)
def test_source_cells_escape_as_html_escape_with_apostrophes_as_xprof_writes_them(text):
    import html

    assert datatable_module._escape(text) == html.escape(text).replace("&#x27;", "&#39;")
