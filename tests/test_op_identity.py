"""What an op is known by (json ``ops``: ``shapes``, ``hlo_text``, ``framework_op``, ``source``
and, for TPU ops, ``dtype``) equals what the raw profile says: the HLO protos of
``/host:metadata`` and the XLA Ops event metadata read here with protobuf alone, the Kineto
trace's JSON read here with ``json``. Texts are computed once per HLO instruction, not per
event."""

from __future__ import annotations

import collections
import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tb_roofline_plugin import demo
from tb_roofline_plugin.cli import main as cli_main
from tb_roofline_plugin.hlo import text as hlo_text
from tb_roofline_plugin.kineto.op_text import inputs_text, stack_source
from tb_roofline_plugin.platforms import gpu
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import hlo_pb2, xplane_pb2
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.serve import stats_store

SHARED = Path(__file__).resolve().parents[2] / "shared/data"
AMD_GEMM = SHARED / "tracelens/jax08_gemm/tw003.xplane.pb"
AMD_ELEMENTWISE = SHARED / "tracelens/jax08_elementwise/tw003.xplane.pb"
TPU = SHARED / "xprof/tpu_inference_2.xplane.pb"
JAX_CPU = SHARED / "jax-cpu/jax_mlp/plugins/profile/2026_11_30_09_47_20/vm.xplane.pb"
TORCH_STACK = SHARED / "new-producers/torch_lstm/lstm_lm.1796151468267422256.pt.trace.json"
TORCH_CALL_STACK = SHARED / "field/kineto_r50_w0/worker0.1623143089861.pt.trace.json.gz"
needs = pytest.mark.skipif


# ---------------------------------------------------------------- oracles from the raw profile

TYPE_NAMES = {number: name.lower() for name, number in hlo_pb2.PrimitiveType.items()}


def raw_shape(shape) -> str:
    """XLA's shape text without its layout, written here from the ShapeProto."""
    if shape.element_type == hlo_pb2.TUPLE:
        return "(" + ", ".join(raw_shape(s) for s in shape.tuple_shapes) + ")"
    if shape.element_type == hlo_pb2.TOKEN:
        return "token[]"
    return f"{TYPE_NAMES[shape.element_type]}[{','.join(str(d) for d in shape.dimensions)}]"


def cut(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def raw_space(path: Path) -> xplane_pb2.XSpace:
    return xplane_pb2.XSpace.FromString(path.read_bytes())


def raw_modules(path: Path) -> dict[int, hlo_pb2.HloModuleProto]:
    """{program id: module} of ``/host:metadata``: event metadata whose stat ``Hlo Proto``
    holds the module; the program id is its ``program_id`` stat, else the metadata's id."""
    plane = next(p for p in raw_space(path).planes if p.name == "/host:metadata")
    names = {i: m.name for i, m in plane.stat_metadata.items()}
    modules = {}
    for key, meta in plane.event_metadata.items():
        stats = {names.get(s.metadata_id): s for s in meta.stats}
        if "Hlo Proto" in stats:
            program = stats.get("program_id")
            number = (program.uint64_value or program.int64_value) if program else key
            proto = hlo_pb2.HloProto.FromString(stats["Hlo Proto"].bytes_value)
            modules[number & (2**64 - 1)] = proto.hlo_module
    return modules


def instructions(module: hlo_pb2.HloModuleProto) -> dict[str, hlo_pb2.HloInstructionProto]:
    entry = next(c for c in module.computations if c.id == module.entry_computation_id)
    found = {i.name: i for c in module.computations for i in c.instructions}
    found.update({i.name: i for i in entry.instructions})
    return found


def _made_by(module: hlo_pb2.HloModuleProto, instr: hlo_pb2.HloInstructionProto):
    """The instruction itself when its metadata names an op, else (a fusion) its fused
    computation's first instruction that does, the root first."""
    if instr.metadata.op_name or instr.opcode != "fusion":
        return instr
    comps = {c.id: c for c in module.computations}
    fused = comps[instr.called_computation_ids[0]]
    root = next(i for i in fused.instructions if i.id == fused.root_id)
    for candidate in [root, *fused.instructions]:
        if candidate.metadata.op_name:
            return candidate
    return instr


def by_id(module: hlo_pb2.HloModuleProto) -> dict[int, hlo_pb2.HloInstructionProto]:
    return {i.id: i for c in module.computations for i in c.instructions}


def export_json(tmp_path, path: Path, *args: str) -> dict:
    out = tmp_path / "out.json"
    assert cli_main(["export", str(path), "--format", "json", "-o", str(out), *args]) == 0
    return json.loads(out.read_text())


# ---------------------------------------------------------------- XLA GPU: the HLO protos


@needs(not AMD_GEMM.is_file(), reason=f"shared sample {AMD_GEMM} not found")
def test_gpu_op_shapes_hlo_text_framework_op_and_source_are_the_hlo_protos(tmp_path):
    data = export_json(tmp_path, AMD_GEMM)
    modules = raw_modules(AMD_GEMM)
    assert len(data["ops"]) == 16
    for op in data["ops"]:
        module = modules[int(op["hlo_module_id"])]
        instr, ids = instructions(module)[op["hlo_name"]], by_id(module)
        operands = [ids[o] for o in instr.operand_ids]
        result = raw_shape(instr.shape)
        want = ", ".join(raw_shape(o.shape) for o in operands) + " → " + result
        assert op["shapes"] == cut(want if operands else result)
        head = f"%{instr.name} = {result} {instr.opcode}(" + ", ".join(
            f"{raw_shape(o.shape)} %{o.name}" for o in operands
        )
        assert op["hlo_text"] == cut(op["hlo_text"]) and cut(head).rstrip("…") in op["hlo_text"]
        md = _made_by(module, instr).metadata
        assert op["framework_op"] == md.op_name
        assert op["source"] == (f"{md.source_file}:{md.source_line}" if md.source_file else "")
        assert op["program_name"] == module.name
    gemm = next(o for o in data["ops"] if o["hlo_name"] == "custom-call.1")
    assert gemm["hlo_text"].endswith(', custom_call_target="__cublas$gemm"')
    assert gemm["source"] == "/workspace/traces/generate_gemm_trace.py:37"
    assert gemm["framework_op"] == "jit(dot)/dot_general"


@needs(not AMD_GEMM.is_file(), reason=f"shared sample {AMD_GEMM} not found")
def test_the_five_amd_custom_call_rows_are_told_apart_by_their_shapes(tmp_path):
    data = export_json(tmp_path, AMD_GEMM)
    gemms = [o for o in data["ops"] if o["hlo_name"] == "custom-call.1"]
    # The workload's GEMM sizes (m x k times k x n), each with its hipBLASLt workspace.
    want = {
        "bf16[8192,4096], bf16[4096,8192] → (bf16[8192,8192], s8[79691776])",
        "bf16[16384,1024], bf16[1024,4096] → (bf16[16384,4096], s8[41943040])",
        "bf16[4096,4096], bf16[4096,4096] → (bf16[4096,4096], s8[67108864])",
        "bf16[2048,8192], bf16[8192,2048] → (bf16[2048,2048], s8[67108864])",
        "bf16[1024,1024], bf16[1024,1024] → (bf16[1024,1024], s8[4194304])",
    }
    assert len(gemms) == 5 and {o["shapes"] for o in gemms} == want
    assert {o["dtype"] for o in gemms} == {"bf16"}
    assert len({o["hlo_module_id"] for o in gemms}) == 5


@needs(not AMD_ELEMENTWISE.is_file(), reason=f"shared sample {AMD_ELEMENTWISE} not found")
def test_the_elementwise_runs_loop_convert_fusions_are_told_apart(tmp_path):
    data = export_json(tmp_path, AMD_ELEMENTWISE)
    fusions = [o for o in data["ops"] if o["hlo_name"] == "loop_convert_fusion"]
    assert len(fusions) == 9  # in 8 programs: jit_add has two of other shapes
    told = {(o["program_name"], o["shapes"]) for o in fusions}
    assert len(told) == 9
    assert all(o["hlo_text"].startswith("%loop_convert_fusion = ") for o in fusions)
    assert all("kind=kLoop" in o["hlo_text"] for o in fusions)
    # XLA left the fusions without metadata: their fused ops' says what made them.
    modules = raw_modules(AMD_ELEMENTWISE)
    for op in fusions:
        module = modules[int(op["hlo_module_id"])]
        md = _made_by(module, instructions(module)["loop_convert_fusion"]).metadata
        assert op["framework_op"] == md.op_name
        assert op["source"] == (f"{md.source_file}:{md.source_line}" if md.source_file else "")
    multiply = next(o for o in fusions if o["program_name"] == "jit_multiply")
    assert (
        instructions(modules[int(multiply["hlo_module_id"])])[
            "loop_convert_fusion"
        ].metadata.op_name
        == ""
    )
    assert multiply["framework_op"] == "jit(multiply)/mul"
    assert multiply["source"] == "/workspace/traces/generate_elementwise_trace.py:24"


@needs(not JAX_CPU.is_file(), reason=f"shared sample {JAX_CPU} not found")
def test_a_jax_cpu_ops_source_is_the_innermost_frame_of_its_hlo_stack(tmp_path):
    """JAX 0.10 writes only a stack (``stack_frame_id``), no source_file: its first frame."""
    data = export_json(tmp_path, JAX_CPU)
    modules = raw_modules(JAX_CPU)
    dot = next(o for o in data["ops"] if o["hlo_name"] == "dot.1")
    module = modules[int(dot["hlo_module_id"])]
    md = instructions(module)["dot.1"].metadata
    assert md.source_file == "" and md.stack_frame_id > 0
    index = module.stack_frame_index
    frame = index.stack_frames[md.stack_frame_id - 1]
    location = index.file_locations[frame.file_location_id - 1]
    file_name = index.file_names[location.file_name_id - 1]
    assert dot["source"] == f"{file_name}:{location.line}" == "/opt/tb-roofline/gen_profiles.py:22"
    assert dot["framework_op"] == md.op_name == "jit(train_step)/transpose(jvp())/transpose"
    assert dot["shapes"] == "f32[128,512], f32[128,512] → f32[512,512]"


def test_op_texts_are_made_once_per_hlo_instruction_not_per_kernel(monkeypatch, tmp_path):
    """A GPU profile's kernels name a few instructions many times: one text each."""
    logdir = tmp_path / "logdir"
    demo.write_demo_logdir(logdir)
    path = next((logdir / "train_gpu").rglob("host0.xplane.pb"))
    calls: list[str] = []
    real = gpu.op_text
    monkeypatch.setattr(
        gpu, "op_text", lambda module, name: calls.append(name) or real(module, name)
    )
    stats = analyze_file(path)
    texts = stats.all_db.hlo_text[stats.all_db.program_id > 0]
    assert (
        len(calls)
        == len(set(zip(stats.all_db.program_id.tolist(), stats.all_db.name.tolist()))) - 1
    )
    assert int(stats.all_db.occurrences.sum()) > 5 * len(calls)  # many kernels, few texts
    assert all(t.startswith("%") for t in texts.tolist())


# ---------------------------------------------------------------- TPU: dtypes from the HLO


def _layouts_out(text: str) -> str:
    """HLO text without the ``{...}`` right after a shape's ``]`` (written here char by char)."""
    out, at = [], 0
    while at < len(text):
        if text[at] == "{" and at and text[at - 1] == "]":
            depth = 0
            while at < len(text):
                depth += {"{": 1, "}": -1}.get(text[at], 0)
                at += 1
                if depth == 0:
                    break
            continue
        out.append(text[at])
        at += 1
    return "".join(out)


@needs(not TPU.is_file(), reason=f"shared sample {TPU} not found")
def test_tpu_op_dtypes_and_shapes_come_from_the_hlo_and_the_text_from_the_event(tmp_path):
    data = export_json(tmp_path, TPU)
    modules = raw_modules(TPU)
    plane = next(p for p in raw_space(TPU).planes if p.name == "/device:TPU:0")
    stat_names = {i: m.name for i, m in plane.stat_metadata.items()}
    lines, tf_ops = {}, {}
    for meta in plane.event_metadata.values():
        stats = {stat_names[s.metadata_id]: s for s in meta.stats}
        if "program_id" in stats:
            key = (
                str(stats["program_id"].uint64_value or stats["program_id"].int64_value),
                meta.display_name,
            )
            lines[key] = meta.name
            tf_ops[key] = stats["tf_op"].str_value if "tf_op" in stats else ""
    sizes = {hlo_pb2.F32: 4, hlo_pb2.U32: 4, hlo_pb2.BF16: 2}
    largest = set()
    assert len(data["ops"]) == 17
    for op in data["ops"]:
        key = (op["hlo_module_id"], op["hlo_name"])
        line = lines[key]
        assert op["hlo_text"] == cut(" ".join(_layouts_out(line).split()))
        module = modules[int(op["hlo_module_id"])]
        instr = instructions(module)[line.split(" = ")[0].lstrip("%")]
        operands = [by_id(module)[o] for o in instr.operand_ids]
        leaves = [s for o in operands for s in _leaves(o.shape)]
        biggest = max(leaves, key=lambda s: sizes[s.element_type] * int(np.prod(s.dimensions)))
        largest.add(biggest.element_type)
        want = ", ".join(raw_shape(o.shape) for o in operands) + " → " + raw_shape(instr.shape)
        assert op["shapes"] == cut(want)
        assert op["framework_op"] == (tf_ops[key].removesuffix(":") or instr.metadata.op_name)
    # The largest operand of every op of this host-offload test is f32 (a u32[] beside it in
    # the async copies' tuples): every op is fp32 (it was "" before).
    assert largest == {hlo_pb2.F32}
    assert {op["dtype"] for op in data["ops"]} == {"fp32"}
    fusion = next(o for o in data["ops"] if o["hlo_name"] == "broadcast_add_fusion")
    assert fusion["framework_op"] == "jit(f)/jit(main)/add"
    assert fusion["source"].endswith("host_offload_stress_test.py:29")


def _leaves(shape):
    if shape.element_type == hlo_pb2.TUPLE:
        for s in shape.tuple_shapes:
            yield from _leaves(s)
    else:
        yield shape


def test_demo_tpu_dtypes_without_hlo_protos_come_from_the_ops_own_lines(tmp_path):
    """The demo's TPU profile has no HLO protos: a matmul fusion is bf16 by its line."""
    logdir = tmp_path / "logdir"
    demo.write_demo_logdir(logdir)
    path = next((logdir / "train_v5p").rglob("host0.xplane.pb"))
    assert not any(p.name == "/host:metadata" and p.event_metadata for p in raw_space(path).planes)
    data = json.loads(render(analyze_file(path), "json", [str(path)]))
    by_name = {o["hlo_name"]: o for o in data["ops"]}
    matmul = by_name["fusion.3"]
    assert matmul["shapes"] == "bf16[8192,1024], bf16[1024,4096] → bf16[8192,4096]"
    assert (
        matmul["dtype"] == "bf16"
        and matmul["framework_op"] == "jit(train_step)/jit(main)/dot_general"
    )
    assert by_name["fusion.9"]["dtype"] == "fp32"  # the f32 optimizer update
    assert by_name["infeed.1"]["dtype"] == ""  # a token operand only: no array, no dtype
    # bf16 is the device's peak; fp32 its half (peaks.device_rules.tpu_dtype_tflops).
    peak = data["device"]["peak_flop_rate_gflops"]
    assert matmul["dtype_peak_gflops"] == peak
    assert by_name["fusion.9"]["dtype_peak_gflops"] == peak / 2


# ---------------------------------------------------------------- Kineto: the trace's JSON

KINETO_TYPES = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "long int": "int64"}


def _signature(event: dict) -> str:
    args = event["args"]
    return ", ".join(
        f"{KINETO_TYPES[t]}[{','.join(map(str, d))}]"
        for d, t in zip(args["Input Dims"], args["Input type"])
        if t in KINETO_TYPES
    )


def _most(values: list[str]) -> str:
    """The value most entries have (ties: the first), and "(+N more)" for the others."""
    counts = collections.Counter(v for v in values if v)
    if not counts:
        return ""
    best = max(counts, key=lambda v: (counts[v], -values.index(v)))
    return best + (f" (+{len(counts) - 1} more)" if len(counts) > 1 else "")


def _holding(frames: list[dict], op: dict) -> list[dict]:
    """The python_function spans holding the op's start on its thread, outermost first."""
    held = [
        f for f in frames if f["tid"] == op["tid"] and f["ts"] <= op["ts"] <= f["ts"] + f["dur"]
    ]
    return sorted(held, key=lambda f: (f["ts"], -f["dur"]))


@needs(not TORCH_STACK.is_file(), reason=f"shared trace {TORCH_STACK} not found")
def test_a_with_stack_traces_ops_have_their_module_source_line_and_input_shapes(tmp_path):
    data = export_json(tmp_path, TORCH_STACK)
    events = json.loads(TORCH_STACK.read_text())["traceEvents"]
    frames = [e for e in events if e.get("cat") == "python_function"]
    by_name = {o["hlo_name"]: o for o in data["ops"]}
    for name in ("aten::mm", "aten::mkldnn_rnn_layer", "aten::mul"):
        ops = sorted(
            (e for e in events if e.get("cat") == "cpu_op" and e["name"] == name),
            key=lambda e: e["ts"],
        )
        sources, modules = [], []
        for op in ops:
            held = _holding(frames, op)
            user = [f["name"] for f in held if re.match(r"^[^<][^(]*\(\d+\): ", f["name"])]
            user = [f for f in user if not f.startswith("torch/")]
            sources.append(re.sub(r"\((\d+)\): .*", r":\1", user[-1]) if user else "")
            modules.append(
                "/".join(
                    f["name"][len("nn.Module: ") :]
                    for f in held
                    if f["name"].startswith("nn.Module: ")
                )
            )
        assert by_name[name]["source"] == _most(sources), name
        assert by_name[name]["framework_op"] == _most(modules), name
        assert by_name[name]["shapes"].startswith(
            _most([_signature(e) for e in ops]).split(" (+")[0]
        )
        assert by_name[name]["hlo_text"] == ""
    mm = by_name["aten::mm"]
    assert mm["shapes"] == "fp32[700,256], fp32[256,2000] (+2 more)"
    assert mm["framework_op"] == "LM_0/Linear_0"
    assert by_name["aten::mkldnn_rnn_layer"]["source"] == "torch_lstm.py:31"
    assert by_name["aten::mkldnn_rnn_layer"]["framework_op"] == "LM_0/LSTM_0"


@needs(not TORCH_CALL_STACK.is_file(), reason=f"shared trace {TORCH_CALL_STACK} not found")
def test_an_older_traces_call_stack_arg_gives_the_source_line(tmp_path):
    data = export_json(tmp_path, TORCH_CALL_STACK)
    events = json.loads(gzip.decompress(TORCH_CALL_STACK.read_bytes()))["traceEvents"]
    convolution = sorted(
        (e for e in events if e.get("name") == "aten::cudnn_convolution" and "args" in e),
        key=lambda e: e["ts"],
    )
    sources = []
    for op in convolution:
        frames = op["args"].get("Call stack", "").split(";")
        user = [f for f in frames if f and "/torch/" not in f and not f.startswith("<")]
        first = re.sub(r"\((\d+)\): .*", r":\1", user[0]) if user else ""
        sources.append(re.sub(r"^.*/site-packages/", "", first))
    want = _most(sources)
    assert want.startswith("torchvision/models/resnet.py:")
    op = next(o for o in data["ops"] if o["hlo_name"] == "aten::cudnn_convolution")
    assert op["source"] == want


def test_recorded_inputs_read_as_tensors_and_concrete_scalars():
    dims = [[8944, 1024], [1024, 1024], [], [], []]
    types = ["c10::BFloat16", "c10::BFloat16", "Scalar", "Int", "float"]
    concrete = ["", "", "1", "", ""]
    assert inputs_text(dims, types, concrete) == "bf16[8944,1024], bf16[1024,1024], 1, fp32[]"
    assert inputs_text(None, None, None) == ""
    assert inputs_text([[2, 3]], ["long int"], None) == "int64[2,3]"
    stack = (
        "/venv/site-packages/torch/nn/modules/conv.py(443): forward;"
        "/venv/site-packages/torchvision/models/resnet.py(124): forward;train.py(9): <module>"
    )
    assert stack_source(stack) == "torchvision/models/resnet.py:124"
    assert stack_source("<built-in method conv2d>;torch/nn/functional.py(1): f") == ""


# ---------------------------------------------------------------- the text of one HLO line


def test_a_tpu_line_reads_as_its_opcode_operand_shapes_and_result():
    line = (
        "%copy-done.1 = f32[5,1024]{1,0:T(8,128)S(5)} copy-done((f32[5,1024]{1,0:T(8,128)S(5)}, "
        'f32[5,1024]{1,0:T(8,128)}, u32[]{:S(2)}) %copy-start.1), metadata={op_name="x"}'
    )
    parsed = hlo_text.parsed_line(line)
    assert parsed == hlo_text.ParsedLine(
        "copy-done", ["(f32[5,1024], f32[5,1024], u32[])"], "f32[5,1024]"
    )
    assert hlo_text.line_dtype(parsed) == "fp32"
    dot = hlo_text.parsed_line("%dot = f32[8,2] dot(bf16[8,4]{1,0} %a, f32[4,2]{1,0} %b)")
    assert hlo_text.line_dtype(dot) == "bf16"  # a contraction: its lhs
    fusion = hlo_text.parsed_line("%f = bf16[8] fusion(f32[2] %a, bf16[8,8] %b), kind=kLoop")
    assert hlo_text.line_dtype(fusion) == "bf16"  # the largest operand (128 B against 8 B)
    assert hlo_text.parsed_line("not an HLO line") is None
    assert hlo_text.shortened("a" * 200) == "a" * 159 + "…"
    assert (
        hlo_text.without_layouts("f32[]{:T(128)S(6)} x, dimensions={}") == "f32[] x, dimensions={}"
    )


def test_a_dot_prints_its_shapes_operands_and_dimensions_without_layouts():
    def array(kind, *dims):
        return hlo_pb2.ShapeProto(
            element_type=kind, dimensions=dims, layout=hlo_pb2.LayoutProto(minor_to_major=[1, 0])
        )

    a = hlo_pb2.HloInstructionProto(
        name="a", opcode="parameter", shape=array(hlo_pb2.BF16, 8, 512), id=1
    )
    b = hlo_pb2.HloInstructionProto(
        name="b", opcode="parameter", parameter_number=1, shape=array(hlo_pb2.BF16, 512, 1024), id=2
    )
    dot = hlo_pb2.HloInstructionProto(
        name="dot.3", opcode="dot", shape=array(hlo_pb2.F32, 8, 1024), id=3, operand_ids=[1, 2],
        dot_dimension_numbers=hlo_pb2.DotDimensionNumbers(
            lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]
        ),
    )  # fmt: skip
    assert hlo_text.instruction_text(dot, [a, b], str) == (
        "%dot.3 = f32[8,1024] dot(bf16[8,512] %a, bf16[512,1024] %b), "
        "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
    )
    assert hlo_text.instruction_text(b, [], str) == "%b = bf16[512,1024] parameter(1)"
    assert hlo_text.shapes_text(["bf16[8,512]", "bf16[512,1024]"], "f32[8,1024]") == (
        "bf16[8,512], bf16[512,1024] → f32[8,1024]"
    )


# ---------------------------------------------------------------- kept with the converted stats


@needs(not AMD_GEMM.is_file(), reason=f"shared sample {AMD_GEMM} not found")
def test_the_texts_survive_the_stats_cache():
    stats = analyze_file(AMD_GEMM)
    again = stats_store.loads(stats_store.dumps(stats))
    for column in ("shapes", "hlo_text", "framework_op", "code_line"):
        assert np.array_equal(getattr(again.all_db, column), getattr(stats.all_db, column))
    assert any("custom_call_target" in t for t in again.all_db.hlo_text.tolist())
