"""The one-pass sums of GPU kernels (``_wire.kernel_sums``) equal the array path and an oracle.

Per op and per (step, op) cell: kernels, executions, time and the flops/bytes stats; per GPU
plane the first start, last end, summed and busy time; per step its device time and the
launches whose kernel is missing; the kernels without an op by name, and those no step
claims. The compiled pass reads the stream lines' bytes in place and asks for each new
attribution key's op; the array path decodes the kernels into columns. They must give the
same bits on the shared AMD profiles and generated ones, the same as the kernels' raw
events summed here in plain Python, and the pass must leave to the kernel-by-kernel path
what it does not do (graph launches, kernels out of time order).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import SHARED_DATA

from tb_roofline_plugin.demo import GpuSpec, gpu_xspace
from tb_roofline_plugin.hlo.modules import program_modules
from tb_roofline_plugin.ops import kernel_sums as ks
from tb_roofline_plugin.platforms import gpu
from tb_roofline_plugin.platforms.analysis import analyze_bytes
from tb_roofline_plugin.platforms.gpu_derived import is_derived_line
from tb_roofline_plugin.platforms.host_steps import host_markers
from tb_roofline_plugin.protos import xplane_pb2
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.xspace import event_table
from tb_roofline_plugin.xspace.profile_reader import GPU_PLANE, HOST_PLANE, decode_profile

compiled = pytest.mark.skipif(event_table._wire is None, reason="the compiled decoder is not built")
AMD_CASES = ("jax08_gemm", "jax08_attention", "jax08_elementwise")
SPECS = {
    "nvidia-cut": GpuSpec(truncated_last_step=True),
    "amd-idle": GpuSpec(vendor="amd", seed=3, idle_gpus=1, steps=3),
    "no-steps": GpuSpec(steps=0, seed=5),
    "three-gpus": GpuSpec(gpus=3, seed=7, steps=5, slow_op="loop_add_fusion"),
}


def _overlapping() -> bytes:
    """The default profile with GPU:0's second stream 3 us earlier: its kernels overlap the
    first stream's."""
    space = gpu_xspace(GpuSpec(seed=11))
    plane = next(p for p in space.planes if p.name == "/device:GPU:0")
    streams = [line for line in plane.lines if line.name.startswith("Stream #") and line.events]
    for event in streams[1].events:
        event.offset_ps -= 3_000_000
    return space.SerializeToString()


def _bytes(case: str) -> bytes:
    if case == "overlap":
        return _overlapping()
    if case in SPECS:
        return gpu_xspace(SPECS[case]).SerializeToString()
    path = SHARED_DATA / "tracelens" / case / "tw003.xplane.pb"
    if not path.is_file():
        pytest.skip(f"shared test data not found at {path} (set TB_ROOFLINE_SHARED)")
    return path.read_bytes()


CASES = [*AMD_CASES, *SPECS, "overlap"]


def _inputs(data: bytes):
    profile = decode_profile(data, "k.xplane.pb")
    planes = profile.planes_matching(GPU_PLANE)
    modules, _ = program_modules(profile)
    return profile, planes, modules, host_markers(profile.plane(HOST_PLANE))


def _bits(sums: ks.KernelSums) -> dict:
    """Every field of the sums as comparable values (floats by their bits)."""
    out: dict = {}
    for name, value in vars(sums).items():
        if isinstance(value, dict):
            for k, v in value.items():
                out[f"{name}.{k}"] = np.ascontiguousarray(v, np.float64).view(np.int64).tolist()
        elif isinstance(value, np.ndarray):
            out[name] = (
                value.view(np.int64).tolist() if value.dtype == np.float64 else value.tolist()
            )
        else:
            out[name] = value
    return out


def _both(data: bytes, only: int):
    _, planes, modules, markers = _inputs(data)
    fast = gpu.compiled_gpu_sums(planes, modules, markers, only)
    kernels = gpu.read_kernels(planes)
    op, table = gpu.assign_ops(kernels, modules)
    slow = gpu.array_gpu_sums(kernels, op, markers, len(planes), only)
    return fast, (slow, table, kernels.kernel_names), markers


@compiled
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("only", [-1, 0])
def test_compiled_pass_gives_the_array_paths_bits(case, only):
    fast, (slow, table, kernel_names), _ = _both(_bytes(case), only)
    assert fast is not None, "the pass declined a profile it can do"
    sums, fast_table, fast_names = fast
    assert _bits(sums) == _bits(slow)
    assert (fast_table.program_id, fast_table.name) == (table.program_id, table.name)
    assert fast_table.category == table.category and fast_table.op_path == table.op_path
    assert fast_names == kernel_names
    assert sums.events > 0 and len(sums.op) > 0


def _oracle(data: bytes, table: gpu.OpTable, only: int) -> dict:
    """The sums from the raw events, one Python loop over the kernels of the XSpace."""
    space = xplane_pb2.XSpace.FromString(data)
    gpus = sorted(
        (int(m.group(1)), p) for p in space.planes if (m := re.match(r"/device:GPU:(\d+)$", p.name))
    )
    host = next((p for p in space.planes if p.name == "/host:CPU"), None)
    windows, launches = [], {}
    for line in host.lines if host is not None else ():
        names = {k: v.name for k, v in host.stat_metadata.items()}
        for event in line.events:
            stats = {names[s.metadata_id]: s for s in event.stats}
            begin = line.timestamp_ns * 1000 + event.offset_ps
            if "_r" in stats or "step_num" in stats:
                windows.append((begin, begin + event.duration_ps))
            if "correlation_id" in stats:
                launches[stats["correlation_id"].uint64_value] = begin
    windows.sort()
    assert all(a[1] <= b[0] for a, b in zip(windows, windows[1:])), "oracle: steps nest"
    ops = {(p, n): i for i, (p, n) in enumerate(zip(table.program_id, table.name))}
    per_op: dict = {}
    per_cell: dict = {}
    unattributed: dict = {}  # kernel name: [count, time], first seen first
    planes = []
    ran = set()
    cell_span: dict = {}
    unclaimed = [0, 0]
    for p, (_, plane) in enumerate(gpus):
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        spans = []
        for line in plane.lines:
            if is_derived_line(line):
                continue
            previous_op, run_kernel = None, None
            for event in line.events:
                stats = {names.get(s.metadata_id): s for s in event.stats}
                begin = line.timestamp_ns * 1000 + event.offset_ps
                end = begin + event.duration_ps
                spans.append((begin, end))
                kernel = plane.event_metadata[event.metadata_id].name
                hlo = names.get(stats["hlo_op"].ref_value, "") if "hlo_op" in stats else ""
                tf = names.get(stats["tf_op"].ref_value, "") if "tf_op" in stats else ""
                program = stats["program_id"].int64_value if "program_id" in stats else 0
                if hlo:
                    op = ops.get((program, hlo.rsplit("::", 1)[-1]), -1)
                elif tf and not tf.startswith("XlaModule:"):
                    op = ops.get((0, f"{tf}/{kernel}"), -1)
                else:
                    op = -1
                if op != previous_op or previous_op is None:
                    start, run_kernel = 1, kernel
                else:
                    start = int(kernel == run_kernel)
                previous_op = op
                correlation = stats["correlation_id"].uint64_value
                ran.add(correlation)
                if only >= 0 and p != only:
                    continue
                add = (1, start, end - begin)
                if op >= 0:
                    per_op[op] = [a + b for a, b in zip(per_op.get(op, (0, 0, 0)), add)]
                else:
                    entry = unattributed.setdefault(kernel or "(unnamed kernel)", [0, 0])
                    entry[0] += 1
                    entry[1] += end - begin
                launch = launches.get(correlation)
                step = next(
                    (
                        s
                        for s, (b, e) in enumerate(windows)
                        if launch is not None and b <= launch < e
                    ),
                    -1,
                )
                if windows and step < 0:
                    unclaimed[0] += 1
                    unclaimed[1] += end - begin
                if step < 0:
                    continue
                first, last = cell_span.get((step, p), (begin, end))
                cell_span[(step, p)] = (min(first, begin), max(last, end))
                if op >= 0:
                    key = (step, op)
                    per_cell[key] = [a + b for a, b in zip(per_cell.get(key, (0, 0, 0)), add)]
        spans.sort()
        busy, reach, piece = 0, None, None
        for begin, end in spans:
            if reach is None or begin > reach:
                busy += reach - piece if reach is not None else 0
                piece, reach = begin, end
            else:
                reach = max(reach, end)
        busy += reach - piece if reach is not None else 0
        summed = sum(e - b for b, e in spans)
        first = min((b for b, _ in spans), default=None)
        last = max((e for _, e in spans), default=None)
        planes.append((first, last, summed, busy))
    totals = [
        sum(
            max(last, windows[s][1]) - min(first, windows[s][0])
            for (step, _), (first, last) in cell_span.items()
            if step == s
        )
        for s in range(len(windows))
    ]
    missing = [
        sum(1 for c, t in launches.items() if b <= t < e and c not in ran) for b, e in windows
    ]
    return {
        "per_op": dict(sorted(per_op.items())),
        "per_cell": dict(sorted(per_cell.items())),
        "unattributed": unattributed,
        "planes": planes,
        "totals": totals,
        "missing": missing,
        "unclaimed": unclaimed,
    }


@compiled
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("only", [-1, 0])
def test_compiled_pass_sums_the_raw_kernel_events(case, only):
    data = _bytes(case)
    _, planes, modules, markers = _inputs(data)
    sums, table, kernel_names = gpu.compiled_gpu_sums(planes, modules, markers, only)
    want = _oracle(data, table, only)

    def rows(ids, columns):
        return {
            i: [int(columns[k][r]) for k in ("count", "executions", "time_ps")]
            for r, i in enumerate(ids)
        }

    assert rows(sums.op.tolist(), sums.per_op) == want["per_op"]
    cells = list(zip(sums.cell_step.tolist(), sums.cell_op.tolist()))
    assert rows(cells, sums.per_cell) == want["per_cell"]
    got_unattributed = {
        kernel_names[k] or "(unnamed kernel)": [int(c), int(t)]
        for k, c, t in zip(sums.unattributed_kernel, sums.unattributed_count, sums.unattributed_ps)
    }
    assert list(got_unattributed.items()) == list(want["unattributed"].items())
    for p, (first, last, summed, busy) in enumerate(want["planes"]):
        if first is None:
            assert sums.plane_last_ps[p] < sums.plane_first_ps[p]
            continue
        assert (sums.plane_first_ps[p], sums.plane_last_ps[p]) == (first, last)
        assert (sums.plane_summed_ps[p], sums.plane_busy_ps[p]) == (summed, busy)
    assert sums.step_total_ps.tolist() == want["totals"]
    assert sums.step_missing.tolist() == want["missing"]
    assert [sums.unclaimed, sums.unclaimed_ps] == want["unclaimed"]
    if case == "nvidia-cut":  # the profile stopped inside the last step; kernels before step 0
        assert want["missing"][-1] > 0 and want["unclaimed"][0] > 0


@compiled
def test_the_generated_profiles_steps_cells_and_overlap_are_real():
    """The oracle's figures for the generated profile are not trivial: many cells per step,
    kernels without an op, streams that overlap."""
    _, planes, modules, markers = _inputs(_bytes("three-gpus"))
    sums, _, _ = gpu.compiled_gpu_sums(planes, modules, markers, -1)
    assert len(markers.steps) == 5 and len(sums.cell_op) > 5 * 3
    assert len(sums.unattributed_kernel) > 0 and sums.unclaimed > 0
    _, planes, modules, markers = _inputs(_bytes("overlap"))
    sums, _, _ = gpu.compiled_gpu_sums(planes, modules, markers, -1)
    overlap = sums.plane_summed_ps - sums.plane_busy_ps
    assert overlap[0] > 0 and overlap[1] == 0


@compiled
@pytest.mark.parametrize("graph", ["node", "launch"])
def test_graph_launches_are_left_to_the_kernel_path(graph, monkeypatch):
    data = gpu_xspace(GpuSpec(graph_launches=graph)).SerializeToString()
    _, planes, modules, markers = _inputs(data)
    assert gpu.compiled_gpu_sums(planes, modules, markers, -1) is None
    fast = render(analyze_bytes(data, "g.xplane.pb"), "json", ["g"])
    monkeypatch.setenv(event_table.PURE_ENV, "1")
    assert render(analyze_bytes(data, "g.xplane.pb"), "json", ["g"]) == fast


@compiled
def test_kernels_out_of_time_order_are_left_to_the_arrays(monkeypatch):
    space = gpu_xspace(GpuSpec())
    plane = next(p for p in space.planes if p.name == "/device:GPU:0")
    line = next(li for li in plane.lines if len(li.events) > 3)
    events = list(line.events)
    events[0], events[1] = events[1], events[0]
    del line.events[:]
    line.events.extend(events)
    data = space.SerializeToString()
    _, planes, modules, markers = _inputs(data)
    assert gpu.compiled_gpu_sums(planes, modules, markers, -1) is None
    fast = render(analyze_bytes(data, "o.xplane.pb"), "json", ["o"])
    monkeypatch.setenv(event_table.PURE_ENV, "1")
    assert render(analyze_bytes(data, "o.xplane.pb"), "json", ["o"]) == fast


@compiled
@pytest.mark.parametrize("case", CASES)
def test_export_is_the_same_with_and_without_the_compiled_pass(case, monkeypatch):
    data = _bytes(case)
    fast = render(analyze_bytes(data, "e.xplane.pb"), "json", ["e"])
    fast_one = render(analyze_bytes(data, "e.xplane.pb", device=0), "json", ["e"])
    monkeypatch.setenv(event_table.PURE_ENV, "1")
    assert render(analyze_bytes(data, "e.xplane.pb"), "json", ["e"]) == fast
    assert render(analyze_bytes(data, "e.xplane.pb", device=0), "json", ["e"]) == fast_one


@compiled
@pytest.mark.parametrize("case", ["nvidia-cut", "three-gpus", "jax08_gemm"])
def test_host_launches_pass_gives_the_line_by_line_markers(case, monkeypatch):
    profile, _, _, markers = _inputs(_bytes(case))
    monkeypatch.setenv(event_table.PURE_ENV, "1")
    slow = host_markers(profile.plane(HOST_PLANE))
    for column in ("numbers", "begin_ps", "end_ps"):
        assert getattr(markers.steps, column).tolist() == getattr(slow.steps, column).tolist()
    assert markers.launch_ids.dtype == slow.launch_ids.dtype == np.uint64
    assert markers.launch_ids.tolist() == slow.launch_ids.tolist()
    assert markers.launch_ps.tolist() == slow.launch_ps.tolist()


def test_cell_sort_orders_by_step_then_op():
    step = np.array([3, 0, 3, 1, 0], np.int64)
    op = np.array([2, 5, 0, 1, 1], np.int64)
    order = ks.cell_sort(step, op)
    assert list(zip(step[order].tolist(), op[order].tolist())) == [
        (0, 1), (0, 5), (1, 1), (3, 0), (3, 2)
    ]  # fmt: skip
    wide = ks.cell_sort(step * 10**12, op)  # a range too wide for the table: sorted
    assert wide.tolist() == order.tolist()
