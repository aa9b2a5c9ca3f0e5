"""The committed ``*_pb2.py`` are exactly what ``proto/`` generates, and keep XProf's numbers."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pool

from tb_roofline_plugin.protos import generate, roofline_model_pb2, xplane_pb2

PACKAGE = Path(generate.__file__).parent


def test_generated_modules_match_the_proto_sources():
    rendered = generate.render()
    committed = {p.name: p.read_text(encoding="utf-8") for p in PACKAGE.glob("*_pb2.py*")}
    assert sorted(rendered) == sorted(committed)
    drifted = [name for name, text in rendered.items() if committed[name] != text]
    assert drifted == [], f"regenerate with `make protos`: {drifted}"


def test_gencode_loads_under_every_runtime_tensorboard_accepts():
    # protoc 31.x writes gencode 6.31.1: runtimes 6.31.1 and newer (7.x included) load it.
    text = (PACKAGE / "xplane_pb2.py").read_text()
    assert "_runtime_version.Domain.PUBLIC,\n    6,\n    31,\n    1," in text


def test_messages_live_in_a_private_pool_not_protobufs_default():
    default = descriptor_pool.Default()
    for name in (
        "tensorflow.profiler.XSpace",
        "tensorflow.profiler.roofline_model.RooflineModelDatabase",
    ):
        try:
            default.FindMessageTypeByName(name)
            found = True
        except KeyError:
            found = False
        assert not found, name


def test_roofline_schema_field_numbers_are_xprofs():
    record = roofline_model_pb2.RooflineModelRecord.DESCRIPTOR.fields_by_name
    expected = {
        "rank": 1,
        "hlo_name": 2,
        "occurrences": 3,
        "measured_flop_rate": 13,
        "bound_by": 16,
        "record_type": 18,
        "step_num": 19,
        "roofline_efficiency": 34,
        "hlo_module_id": 35,
        "vmem_write_operational_intensity": 42,
        "source_info": 43,
        "apply_time_scale_multiplier": 44,
        "flops_v2": 45,
    }
    assert {k: record[k].number for k in expected} == expected
    database = roofline_model_pb2.RooflineModelDatabase.DESCRIPTOR
    assert database.fields_by_name["roofline_model_record"].number == 5
    assert database.fields_by_name["diagnostics"].number == 7
    assert database.fields_by_name["time_scale_multiplier"].number == 16
    assert database.full_name == "tensorflow.profiler.roofline_model.RooflineModelDatabase"
    assert roofline_model_pb2.PER_STEP == 3 and roofline_model_pb2.ALL_HW == 4


def test_xspace_wire_fields():
    event = xplane_pb2.XEvent.DESCRIPTOR.fields_by_name
    assert (event["offset_ps"].number, event["num_occurrences"].number) == (2, 5)
    stat = xplane_pb2.XStat.DESCRIPTOR.fields_by_name
    assert stat["ref_value"].number == 7 and stat["bytes_value"].number == 6
    line = xplane_pb2.XLine.DESCRIPTOR.fields_by_name
    assert line["duration_ps"].number == 9 and line["display_name"].number == 11


def test_our_json_mapping_equals_protobufs(shared_data):
    from google.protobuf import json_format

    from tb_roofline_plugin.platforms.analysis import analyze_file
    from tb_roofline_plugin.render.export import message_to_dict
    from tb_roofline_plugin.roofline.model import build_database

    for path in (
        shared_data / "xprof" / "tpu_inference_2.xplane.pb",
        shared_data / "tracelens" / "jax08_attention" / "tw003.xplane.pb",
    ):
        database = build_database(analyze_file(path))
        assert message_to_dict(database) == json_format.MessageToDict(
            database, preserving_proto_field_name=True
        )
