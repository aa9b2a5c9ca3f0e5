"""Reading a generated XSpace's stats back by name, for the demo-data tests."""

from __future__ import annotations

from tb_roofline_plugin.protos import xplane_pb2


def named_stats(plane: xplane_pb2.XPlane, stats) -> dict:
    """{name: (value field, value)}; a ref value is the name of the stat it points to."""
    out = {}
    for stat in stats:
        kind = stat.WhichOneof("value")
        value = getattr(stat, kind)
        if kind == "ref_value":
            value = plane.stat_metadata[value].name
        out[plane.stat_metadata[stat.metadata_id].name] = (kind, value)
    return out
