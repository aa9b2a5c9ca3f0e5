"""The layer tree: every producer's name stacks folded into layers whose sums are their ops'.

Oracles: XLA's own cost of each ``jax.named_scope`` block (``cost_analysis()`` of the block
compiled alone) and 2·M·N·K by hand; the HLO ``op_name`` read from the raw XSpace here; a
PyTorch trace written here in Kineto's format (``with_modules=True``: ``nn.Module: X``
python_function ranges, autograd nodes with their forward op's sequence number); the real
H100 trace's GEMM shapes read from its JSON; the Program record of the same selection.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from jax_programs import LAYERED, record_layered
from kineto_oracle import Holder, gemm_flops, kernel_owners, load

from tb_roofline_plugin.kineto import analyze_trace
from tb_roofline_plugin.ops.layers import (
    IDLE,
    NO_LAYER,
    OWN_OPS,
    layer_of,
    layer_tree,
    parse_path,
)
from tb_roofline_plugin.ops.op_metrics import OpMetricsDb, empty_columns
from tb_roofline_plugin.ops.op_stats import combine_hosts
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import hlo_pb2, xplane_pb2
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.render.layers import layers_dict
from tb_roofline_plugin.serve import stats_store

KERAS = "new-producers/tf_keras_fit/train"
QWEN = "field/tl_h100_qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
LSTM = "new-producers/torch_lstm"


# --- name stacks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_name", "layers", "backward"),
    [
        ("jit(step)/jvp(mlp_a)/dot_general", ("mlp_a",), False),
        ("jit(step)/transpose(jvp(mlp_a))/dot_general", ("mlp_a",), True),
        ("jit(step)/jvp(mlp_a)/jit(relu)/max", ("mlp_a",), False),  # a function, not a layer
        ("jit(train_step)/jvp(Transformer)/block_3/attention/dot_general",
         ("Transformer", "block_3", "attention"), False),  # Flax modules
        ("jit(loss)/jvp(block_0)/mlp/vmap()/dot_general", ("block_0", "mlp"), False),
        # jax.checkpoint: the forward rematerialized inside the backward is the one layer
        ("jit(loss)/transpose(jvp(block_1))/jvp(block_1)/checkpoint/rematted_computation/"
         "inner/cos", ("block_1", "inner"), True),
        ("jit(loss)/transpose(jvp(scan))/while/body/closed_call/dot_general", ("scan",), True),
        ("jit(train_step)/jvp(bhts,bshd->bthd)/dot_general", (), False),  # jnp.einsum's call
        ("jit(f)/jit(main)/add:", (), False),  # TPU's tf_op (name:type)
        ("jit(step)/transpose(jvp())/mul;jit(step)/transpose(jvp())/broadcast_in_dim", (), True),
        ("jit(step)/jit(main)/cond/branch_1_fun/head/tanh", ("head",), False),
        ("params['blocks'][0]['w1']", (), False),  # a parameter: one component, no layer
        ("", (), False),
        # PyTorch (kineto/scopes.py): module path, autograd node, op
        ("LM_0/Linear_0/aten::addmm", ("LM_0", "Linear_0"), False),
        ("LM_0/Linear_0/AddmmBackward0/aten::mm", ("LM_0", "Linear_0"), True),
        ("torch::autograd::AccumulateGrad/aten::add_", (), True),
    ],
)  # fmt: skip
def test_name_stacks_fold_the_frameworks_wrappers(op_name, layers, backward):
    parsed = parse_path(op_name)
    assert (parsed.layers, parsed.backward) == (layers, backward)


def test_tensorflow_gradients_go_to_the_forward_layer_their_name_continues():
    paths = [
        "sequential_1/dense_1/MatMul",  # forward: layer sequential_1/dense_1
        "sequential_1/lstm_1/while/lstm_cell_1/MatMul",
        "gradient_tape/sequential_1/dense_1/MatMul/MatMul",  # the gradient of dense_1/MatMul
        "gradient_tape/sequential_1/dense_1/ReluGrad",  # a gradient op in the layer's scope
        "gradient_tape/sequential_1/lstm_1/while/sequential_1/lstm_1/while/lstm_cell_1/"
        "MatMul/MatMul_1",  # a while loop's gradient repeats the loop's path
        "training/Adam/gradients/gradients/dense/MatMul_grad/MatMul_1",  # TF1, no forward op
        "adam/AssignAddVariableOp_1",
    ]
    layers, backward = layer_of(paths)
    assert layers == [
        ("sequential_1", "dense_1"),
        ("sequential_1", "lstm_1", "lstm_cell_1"),
        ("sequential_1", "dense_1"),
        ("sequential_1", "dense_1"),
        ("sequential_1", "lstm_1", "lstm_cell_1"),
        ("dense",),
        ("adam",),
    ]
    assert backward == [False, False, True, True, True, True, False]


def _db(rows: list[tuple], total_ps: int) -> OpMetricsDb:
    """Rows of (name, op_path, category, self time ps, flops, bytes)."""
    cols = empty_columns(len(rows))
    for i, (name, path, category, time, flops, nbytes) in enumerate(rows):
        cols["name"][i], cols["op_path"][i], cols["category"][i] = name, path, category
        cols["time_ps"][i] = cols["self_time_ps"][i] = time
        cols["flops"][i], cols["bytes_accessed"][i] = flops, nbytes
        cols["occurrences"][i] = 1 if name != "IDLE" else 0
    return OpMetricsDb(**cols, total_time_ps=total_ps)


def test_tree_sums_its_ops_once_each_and_cuts_at_any_depth():
    db = _db(
        [
            ("dot.1", "jit(f)/jvp(enc)/attn/dot_general", "convolution", 400, 1000.0, 10.0),
            ("dot.2", "jit(f)/transpose(jvp(enc))/attn/dot_general", "convolution", 600, 2e3, 20.0),
            ("add.1", "jit(f)/jvp(enc)/add", "loop fusion", 50, 10.0, 5.0),  # enc's own op
            ("while.1", "jit(f)/jvp(enc)/mlp/while", "while", 30, 999.0, 99.0),  # a container
            ("mul.1", "jit(f)/jvp(enc)/mlp/while/body/mul", "loop fusion", 70, 7.0, 7.0),
            ("sub.1", "jit(f)/sub", "loop fusion", 20, 3.0, 3.0),  # no layer
            ("IDLE", "", "IDLE", 30, 0.0, 0.0),
        ],
        total_ps=1200,
    )  # fmt: skip
    tree = layer_tree(db)
    at = {p: i for i, p in enumerate(tree.path)}
    assert tree.path[0] == "" and tree.name[0] == "Program"
    assert set(at) == {"", "enc", "enc/attn", "enc/mlp", f"enc/{OWN_OPS}", NO_LAYER, "IDLE"}
    enc, attn = at["enc"], at["enc/attn"]
    assert tree.self_time_ps[attn].tolist() == [400, 600, 0]  # forward, backward, no pass
    assert tree.flops[attn].tolist() == [1000.0, 2000.0, 0.0]
    # The while loop's time counts, its FLOPs and bytes are its body's (as the Program's).
    assert tree.self_time_ps[at["enc/mlp"]].sum() == 100
    assert tree.flops[at["enc/mlp"]].sum() == 7.0
    assert tree.self_time_ps[enc].sum() == 1150
    assert tree.flops[0].sum() == 1000 + 2000 + 10 + 7 + 3
    assert tree.bytes_accessed[0].sum() == 10 + 20 + 5 + 7 + 3
    assert tree.self_time_ps[0].sum() == 1200 == db.total_time_ps
    assert tree.kind[at["IDLE"]] == IDLE
    assert tree.self_time_ps[at["IDLE"]].tolist() == [0, 0, 30]  # idle: in neither pass
    assert tree.self_time_ps[0].tolist() == [400 + 50 + 30 + 70 + 20, 600, 30]
    # Children by time, most first; (own ops) after the sub-layers, (no layer) and IDLE last.
    assert [tree.name[c] for c in tree.children(enc)] == ["attn", "mlp", OWN_OPS]
    assert [tree.name[c] for c in tree.children(0)] == ["enc", NO_LAYER, "IDLE"]
    for depth in range(tree.max_depth + 1):  # every cut holds every row once
        held = np.concatenate([tree.rows_of(n) for n in tree.at_depth(depth)])
        assert sorted(held.tolist()) == list(range(len(db)))
    assert [tree.path[n] for n in tree.at_depth(1)] == ["enc", NO_LAYER, "IDLE"]


# --- the Program's sums ---------------------------------------------------------------------------


def _program(stats, step: str) -> dict:
    """The Program record (infeed/outfeed included) of the json of ``step``."""
    doc = json.loads(render(stats, "json", [], step if step in ("total", "average") else int(step)))
    kind = {"total": "ALL", "average": "AVERAGE_STEP"}.get(step, "PER_STEP")
    (program,) = [
        r
        for r in doc["database"]["roofline_model_record"]
        if r["hlo_name"] == "Program" and r.get("include_infeed_outfeed")
        and r.get("record_type", "ALL") == kind and str(r.get("step_num", 0)) in (step, "0")
    ]  # fmt: skip
    return {"program": program, "layers": doc["layers"]}


SUM_CASES = [
    ("xprof/tpu_inference_2.xplane.pb", True),
    ("xprof/tpu_inference_2.xplane.pb#1", True),  # one TensorCore of the host (--device 1)
    ("tracelens/jax08_attention/tw003.xplane.pb", True),
    (KERAS, False),  # XLA:CPU ops overlap on threads: self times exceed the wall time
    (QWEN, True),
    (LSTM, True),
    ("pytorch/a100_recsys/control.pt.trace.json.gz", False),  # NCCL kernels beside compute
]


@pytest.mark.parametrize(("name", "timed_by_device"), SUM_CASES)
def test_tree_sums_equal_the_program(shared_data, name, timed_by_device):
    """Total and, where there are steps, the first step and the average."""
    name, _, device = name.partition("#")
    path = shared_data / name
    files = (
        sorted(path.rglob("*.xplane.pb")) + sorted(path.glob("*.json*"))
        if path.is_dir()
        else [path]
    )
    stats = analyze_file(files[0], device=int(device) if device else None)
    steps = ["total"]
    if stats.complete_steps:
        steps += [str(stats.complete_steps[0].step_num), "average"]
    for step in steps:
        found = _program(stats, step)
        program, root = found["program"], found["layers"]["nodes"][0]
        assert root["name"] == "Program"
        assert root["flops"] == pytest.approx(program["flops_v2"], rel=1e-12, abs=1e-6)
        assert root["bytes_accessed"] == pytest.approx(int(program["bytes_accessed"]), abs=1)
        if timed_by_device:
            assert root["self_time_us"] == pytest.approx(program["total_time_in_us"], rel=1e-9)
        else:
            assert root["self_time_us"] >= program["total_time_in_us"] * (1 - 1e-9)
        # Each depth's layers hold the root's sums.
        nodes = found["layers"]["nodes"]
        for depth in range(1, found["layers"]["max_depth"] + 1):
            cut = [
                n
                for n in nodes
                if n["depth"] == depth or (not n["children"] and 0 < n["depth"] < depth)
            ]
            assert sum(n["flops"] for n in cut) == pytest.approx(root["flops"], rel=1e-9, abs=1e-6)
            assert sum(n["self_time_us"] for n in cut) == pytest.approx(
                root["self_time_us"], rel=1e-9
            )


# --- JAX: named scopes of known cost --------------------------------------------------------------


@pytest.fixture(scope="module")
def layered(tmp_path_factory):
    """The layered JAX program recorded on CPU: inference and training, 3 steps each."""
    out = {}
    for name in ("forward", "train"):
        path, costs = record_layered(tmp_path_factory.mktemp(name), name)
        out[name] = (analyze_file(path), costs, path)
    return out


def _nodes(doc: dict) -> dict[str, dict]:
    return {n["path"]: n for n in doc["nodes"]}


def _dot_flops(node: dict, wanted_pass: str) -> float:
    return sum(o["flops"] for o in node["ops"] if o["op_path"].endswith("dot_general")
               and o["pass"] == wanted_pass)  # fmt: skip


def test_jax_named_scopes_hold_each_blocks_xla_cost(layered):
    stats, costs, _ = layered["forward"]
    nodes = _nodes(layers_dict(stats, "average"))
    for scope in ("embedding", "mlp_a", "mlp_b"):
        assert nodes[scope]["flops"] == costs[scope]  # XLA's cost of the block compiled alone
        assert nodes[scope]["backward"]["flops"] == 0
    assert nodes[""]["flops"] == costs["program"]
    s = LAYERED
    b = s["batch"]
    assert (
        _dot_flops(nodes["mlp_a"], "forward")
        == 2 * b * s["width"] * s["a_hidden"] + 2 * b * s["a_hidden"] * s["a_out"]
    )
    assert (
        _dot_flops(nodes["mlp_b"], "forward")
        == 2 * b * s["a_out"] * s["b_hidden"] + 2 * b * s["b_hidden"] * s["width"]
    )
    # The whole profile holds three steps of it.
    assert _nodes(layers_dict(stats))["mlp_b"]["flops"] == 3 * costs["mlp_b"]


def test_forward_and_backward_of_a_jax_layer_meet_under_its_name(layered):
    stats, costs, _ = layered["train"]
    doc = layers_dict(stats, 1)
    nodes = _nodes(doc)
    assert {"embedding", "mlp_a", "mlp_b", NO_LAYER} <= set(nodes)
    assert not any("jvp" in p or "transpose" in p or "jit" in p for p in nodes)
    s = LAYERED
    b = s["batch"]
    for scope, (d_in, hidden, d_out) in (
        ("mlp_a", (s["width"], s["a_hidden"], s["a_out"])),
        ("mlp_b", (s["a_out"], s["b_hidden"], s["width"])),
    ):
        node = nodes[scope]
        assert node["forward"]["flops"] == costs[scope]
        forward_dots = 2 * b * d_in * hidden + 2 * b * hidden * d_out
        assert _dot_flops(node, "forward") == forward_dots
        # The backward: both dots' gradients (of the input and of the weight), 2·M·N·K each,
        # and relu's gradient (a compare and a select per element, XLA's elementwise rule).
        assert node["backward"]["flops"] == 2 * forward_dots + 2 * b * hidden
        assert {o["pass"] for o in node["ops"]} == {"forward", "backward"}
        assert node["flops"] == node["forward"]["flops"] + node["backward"]["flops"]
        assert node["self_time_us"] == pytest.approx(
            node["forward"]["self_time_us"] + node["backward"]["self_time_us"]
        )
    assert nodes[""]["flops"] == costs["program"]  # XLA's cost of the whole training step


def test_op_path_is_the_hlo_op_name(shared_data):
    """Read from the raw XSpace: each op's HLO instruction's metadata.op_name."""
    (path,) = (shared_data / KERAS).rglob("*.xplane.pb")
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (meta,) = [p for p in space.planes if p.name == "/host:metadata"]
    stat_names = {k: m.name for k, m in meta.stat_metadata.items()}
    op_names = {}
    for event_meta in meta.event_metadata.values():
        for stat in event_meta.stats:
            if stat_names.get(stat.metadata_id) == "Hlo Proto":
                module = hlo_pb2.HloProto.FromString(stat.bytes_value).hlo_module
                for computation in module.computations:
                    for instr in computation.instructions:
                        op_names[instr.name] = instr.metadata.op_name
    db = analyze_file(path).all_db
    named = [(n, p) for n, p in zip(db.name.tolist(), db.op_path.tolist()) if n in op_names]
    assert len(named) > 100
    assert all(op_names[n] == p for n, p in named)


def test_tensorflow_keras_layers_hold_their_gradients(shared_data):
    (path,) = (shared_data / KERAS).rglob("*.xplane.pb")
    stats = analyze_file(path)
    doc = layers_dict(stats)
    nodes = _nodes(doc)
    assert {"sequential_1", "sequential_1/dense_1", "sequential_1/lstm_1",
            "sequential_1/conv1d_1", "sequential_1/embedding_1", "adam"} <= set(nodes)  # fmt: skip
    db = stats.all_db
    paths = db.op_path.tolist()
    for layer in ("sequential_1/dense_1", "sequential_1/dense_1_2", "sequential_1/embedding_1"):
        forward = [i for i, p in enumerate(paths) if p.startswith(f"{layer}/")]
        backward = [i for i, p in enumerate(paths) if p.startswith(f"gradient_tape/{layer}/")]
        assert forward and backward
        node = nodes[layer]
        assert node["forward"]["flops"] == pytest.approx(db.flops[forward].sum())
        assert node["backward"]["flops"] == pytest.approx(db.flops[backward].sum())
        assert node["forward"]["self_time_us"] == pytest.approx(
            db.self_time_ps[forward].sum() / 1e6
        )
        assert node["backward"]["self_time_us"] == pytest.approx(
            db.self_time_ps[backward].sum() / 1e6
        )
    assert nodes["adam"]["backward"]["flops"] == 0


def test_idle_time_is_in_neither_pass(shared_data):
    """The IDLE row's time counts in its node's and the Program's time, never in a pass: the
    Program's forward + backward is the ops' self time, without the idle time."""
    (path,) = (shared_data / KERAS).rglob("*.xplane.pb")
    stats = analyze_file(path)
    db = stats.all_db
    idle = (db.name == "IDLE") & (db.category == "IDLE")
    assert idle.sum() == 1 and db.self_time_ps[idle].sum() > 1e11  # ~300 ms on this profile
    nodes = _nodes(layers_dict(stats))
    program, gone = nodes[""], nodes["IDLE"]
    ops_us = db.self_time_ps[~idle].sum() / 1e6
    assert program["forward"]["self_time_us"] + program["backward"]["self_time_us"] == (
        pytest.approx(ops_us)
    )
    assert program["self_time_us"] == pytest.approx(db.self_time_ps.sum() / 1e6)
    assert gone["self_time_us"] == pytest.approx(db.self_time_ps[idle].sum() / 1e6)
    assert gone["forward"]["self_time_us"] == gone["backward"]["self_time_us"] == 0
    text = run_cli("summary", str(path), "--by", "layer", "--depth", "1").stdout
    (row,) = [line for line in text.splitlines() if line.startswith("  IDLE ")]
    assert " - " in row and "0.0 / 0.0" not in row


# --- PyTorch: module ranges -----------------------------------------------------------------------

H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0,
        "numSms": 132, "totalGlobalMem": 85018279936}  # fmt: skip
BATCH, D_IN, D_HID, D_OUT = 64, 256, 512, 128


class _Trace:
    """Kineto's JSON as torch.profiler writes it with record_shapes, with_stack and
    with_modules on a GPU: CPU ops, module ranges, launches and their kernels."""

    MAIN, AUTOGRAD = 1000, 1001

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.correlation = 0
        self.python_id = 0
        self.gpu_at = 0.0
        self.kernel_us: dict[str, float] = {}  # module path + pass -> kernel time, all steps

    def span(self, cat: str, name: str, tid: int, ts: float, dur: float, **args) -> dict:
        event = {"ph": "X", "cat": cat, "name": name, "pid": self.MAIN, "tid": tid,
                 "ts": ts, "dur": dur, "args": args}  # fmt: skip
        self.events.append(event)
        return event

    def module(self, name: str, ts: float, dur: float) -> None:
        self.python_id += 1
        self.span("python_function", f"nn.Module: {name}", self.MAIN, ts, dur,
                  **{"Python parent id": self.python_id - 1, "Python id": self.python_id,
                     "Python module id": 0})  # fmt: skip

    def op(self, name, tid, ts, dur, dims=None, seq=None, kernel_us=0.0, key=""):
        args = {"External id": len(self.events) + 1, "Record function id": 0}
        if seq is not None:
            args.update({"Sequence number": seq, "Fwd thread id": 0 if tid == self.MAIN else 1})
        if dims is not None:
            args.update({"Input Dims": dims, "Input type": ["float"] * len(dims)})
        self.span("cpu_op", name, tid, ts, dur, **args)
        if kernel_us:
            self.correlation += 1
            self.span(
                "cuda_runtime", "cudaLaunchKernel", tid, ts + 1, 1, correlation=self.correlation
            )
            self.gpu_at = max(self.gpu_at, ts + 2)
            event = self.span("kernel", f"kernel_{name}", 7, self.gpu_at, kernel_us,
                              device=0, stream=7, correlation=self.correlation)  # fmt: skip
            event["pid"] = 0
            self.gpu_at += kernel_us
            self.kernel_us[key] = self.kernel_us.get(key, 0.0) + kernel_us

    def step(self, number: int, t0: float) -> None:
        """One training step: forward in modules, loss, backward on the autograd thread."""
        seq = 100 * number
        self.span("user_annotation", f"ProfilerStep#{number}", self.MAIN, t0, 900)
        self.module("Net_0", t0 + 10, 300)
        self.span("user_annotation", "encoder", self.MAIN, t0 + 15, 200)  # record_function
        self.module("Linear_0", t0 + 20, 90)
        self.op(
            "aten::linear", self.MAIN, t0 + 21, 80, [[BATCH, D_IN], [D_HID, D_IN], [D_HID]], seq + 1
        )
        self.op("aten::addmm", self.MAIN, t0 + 25, 60, [[D_HID], [BATCH, D_IN], [D_IN, D_HID]],
                seq + 1, kernel_us=40.0, key="Net_0/encoder/Linear_0 forward")  # fmt: skip
        self.module("ReLU_0", t0 + 120, 40)
        self.op("aten::relu", self.MAIN, t0 + 121, 30, [[BATCH, D_HID]], seq + 2, kernel_us=5.0,
                key="Net_0/encoder/ReLU_0 forward")  # fmt: skip
        self.module("Linear_1", t0 + 220, 80)
        self.op(
            "aten::linear",
            self.MAIN,
            t0 + 221,
            70,
            [[BATCH, D_HID], [D_OUT, D_HID], [D_OUT]],
            seq + 3,
        )
        self.op("aten::addmm", self.MAIN, t0 + 225, 60, [[D_OUT], [BATCH, D_HID], [D_HID, D_OUT]],
                seq + 3, kernel_us=20.0, key="Net_0/Linear_1 forward")  # fmt: skip
        self.op(
            "aten::sum",
            self.MAIN,
            t0 + 320,
            20,
            [[BATCH, D_OUT]],
            seq + 4,
            kernel_us=2.0,
            key="loss",
        )
        # Backward: the engine's nodes on the autograd thread, each with its forward's number.
        b = t0 + 400
        for node, s, ops in (
            ("SumBackward0", seq + 4, [("aten::expand", None, 0.0)]),
            ("AddmmBackward0", seq + 3, [
                ("aten::mm", [[BATCH, D_OUT], [D_OUT, D_HID]], 20.0),  # grad of the input
                ("aten::mm", [[D_OUT, BATCH], [BATCH, D_HID]], 21.0),  # grad of the weight
            ]),
            ("ReluBackward0", seq + 2, [
                ("aten::threshold_backward", [[BATCH, D_HID], [BATCH, D_HID]], 6.0),
            ]),
            ("AddmmBackward0", seq + 1, [("aten::mm", [[D_HID, BATCH], [BATCH, D_IN]], 41.0)]),
        ):  # fmt: skip
            path = {seq + 4: "loss", seq + 3: "Net_0/Linear_1", seq + 2: "Net_0/encoder/ReLU_0",
                    seq + 1: "Net_0/encoder/Linear_0"}[s]  # fmt: skip
            self.op(f"autograd::engine::evaluate_function: {node}", self.AUTOGRAD, b, 90, seq=s)
            self.op(node, self.AUTOGRAD, b + 2, 85, seq=s)
            for i, (name, dims, us) in enumerate(ops):
                self.op(name, self.AUTOGRAD, b + 5 + 30 * i, 25, dims, kernel_us=us,
                        key=f"{path} backward" if path != "loss" else "loss")  # fmt: skip
            b += 100

    def write(self, path: Path) -> None:
        document = {"schemaVersion": 1, "deviceProperties": [H100], "record_shapes": 1,
                    "with_stack": 1, "with_modules": 1, "traceEvents": self.events}  # fmt: skip
        path.write_text(json.dumps(document))


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory):
    trace = _Trace()
    for number in (1, 2):
        trace.step(number, 10_000.0 * number)
    path = tmp_path_factory.mktemp("torch") / "worker0.1.pt.trace.json"
    trace.write(path)
    return path, trace


def test_pytorch_modules_hold_their_gemms_forward_and_backward(torch_trace):
    path, trace = torch_trace
    stats = analyze_trace(path)
    assert stats.layer_split is not None
    gemm = {
        "Net_0/encoder/Linear_0": (2 * BATCH * D_IN * D_HID, 2 * D_HID * BATCH * D_IN),
        "Net_0/Linear_1": (2 * BATCH * D_HID * D_OUT, 2 * (2 * BATCH * D_OUT * D_HID)),
    }
    for step, count in (("1", 1), ("total", 2)):
        nodes = _nodes(layers_dict(stats, "total" if step == "total" else int(step)))
        assert {"Net_0", "Net_0/encoder", "Net_0/encoder/ReLU_0", NO_LAYER} <= set(nodes)
        for layer, (forward, backward) in gemm.items():
            node = nodes[layer]
            assert node["forward"]["flops"] == count * forward
            assert node["backward"]["flops"] == count * backward
            for which in ("forward", "backward"):
                expected_us = count * trace.kernel_us[f"{layer} {which}"] / 2  # of 2 steps
                assert node[which]["self_time_us"] == pytest.approx(expected_us)
            assert {(o["name"], o["pass"]) for o in node["ops"]} >= {
                ("aten::addmm", "forward"), ("aten::mm", "backward")}  # fmt: skip
        # The loss ran outside every module: its forward and backward have no layer.
        assert nodes[NO_LAYER]["self_time_us"] == pytest.approx(count * trace.kernel_us["loss"] / 2)
    # The op rows are not split: one aten::mm row of every module.
    assert stats.all_db.name.tolist().count("aten::mm") == 1


def test_pytorch_layers_survive_the_cache_and_combining_workers(torch_trace):
    path, _ = torch_trace
    stats = analyze_trace(path)
    again = stats_store.loads(stats_store.dumps(stats))
    assert layers_dict(again, 2) == layers_dict(stats, 2)
    both = combine_hosts([stats, again])
    one, two = _nodes(layers_dict(stats)), _nodes(layers_dict(both))
    assert set(one) == set(two)
    for layer in one:
        assert two[layer]["flops"] == 2 * one[layer]["flops"]


def test_real_h100_trace_modules_hold_their_gemms(shared_data):
    """Qwen1.5 inference recorded with with_modules: every Linear module's FLOPs are its GEMM's
    2·M·N·K, from the shapes of the ops whose kernels ran in it (the raw JSON)."""
    path = shared_data / QWEN
    _, events = load(path)
    modules = Holder([e for e in events if e.get("cat") == "python_function"
                      and e["name"].startswith("nn.Module: Linear_")])  # fmt: skip
    expected: dict[str, float] = {}
    for _, kind, op in kernel_owners(events):
        if kind != "op" or op["name"] not in ("aten::mm", "aten::addmm"):
            continue
        module = modules.innermost((op["pid"], op["tid"]), op["ts"])
        if module is not None:
            name = module["name"].split(": ", 1)[1]
            expected[name] = expected.get(name, 0.0) + gemm_flops(op)
    assert len(expected) > 100
    nodes = layers_dict(analyze_trace(path))["nodes"]
    linear = {n["name"]: n for n in nodes if n["name"].startswith("Linear_")}
    assert set(linear) == set(expected)
    for name, flops in expected.items():
        assert linear[name]["flops"] == flops
        assert math.isclose(linear[name]["forward"]["flops"], flops)
    paths = {n["path"] for n in nodes}
    assert "Qwen2Model_0/Qwen2DecoderLayer_0/Qwen2Attention_0/Linear_0" in paths


def test_pytorch_cpu_backward_meets_its_module(shared_data):
    """The LSTM LM on CPU: the LSTM's backward (MkldnnRnnLayerBackward0) is under LSTM_0."""
    nodes = _nodes(layers_dict(analyze_trace(next((shared_data / LSTM).glob("*.json")))))
    lstm = nodes["LM_0/LSTM_0"]
    assert lstm["forward"]["flops"] > 0 and lstm["backward"]["flops"] > 0
    backward_ops = {o["name"] for o in lstm["ops"] if o["pass"] == "backward"}
    assert "aten::mkldnn_rnn_layer_backward" in backward_ops
    assert not any("Backward" in p for p in nodes)


# --- CLI ------------------------------------------------------------------------------------------


def test_summary_by_layer_and_the_layers_csv(torch_trace, tmp_path):
    path, _ = torch_trace
    out = run_cli("summary", path, "--by", "layer", "--depth", "1", check=True).stdout
    lines = out.splitlines()
    assert any(line.startswith("layer ") and "bound by" in line for line in lines)
    assert any(line.startswith("  Net_0 ") for line in lines)
    assert not any(line.startswith("    ") for line in lines)  # depth 1: no grandchildren
    deeper = run_cli("summary", path, "--by", "layer", "--depth", "3", "--step", "2", check=True)
    assert "      Linear_0 " in deeper.stdout and "step 2" in deeper.stdout
    csv_path = tmp_path / "layers.csv"
    run_cli("export", path, "--format", "csv", "--by", "layer", "-o", csv_path, check=True)
    rows = [line.split(",") for line in csv_path.read_text().splitlines()]
    assert rows[0][:3] == ["layer", "depth", "kind"]
    by_path = {r[0]: r for r in rows[1:]}
    assert by_path["Net_0/encoder/Linear_0"][1] == "3"
    flops = rows[0].index("FLOPs")
    assert float(by_path["Net_0/Linear_1"][flops]) == 2 * (2 * BATCH * D_HID * D_OUT * 3)
    doc = json.loads(run_cli("export", path, "--format", "json", check=True).stdout)
    assert _nodes(doc["layers"])["Net_0/Linear_1"]["flops"] == float(
        by_path["Net_0/Linear_1"][flops]
    )
    bad = run_cli("export", path, "--by", "layer")
    assert bad.returncode == 2 and "--format csv" in bad.stderr
    bad = run_cli("summary", path, "--depth", "2")
    assert bad.returncode == 2 and "--by layer" in bad.stderr


def test_profile_without_scopes_says_how_to_record_them(shared_data):
    doc = layers_dict(
        analyze_file(
            shared_data / "ptxla-cpu/mlp_direct/plugins/profile/2026_12_01_06_53_22/vm.xplane.pb"
        )
    )
    assert [n["name"] for n in doc["nodes"] if n["depth"] == 1] == [NO_LAYER, "IDLE"]
    assert "XLA_HLO_DEBUG=1" in doc["notes"][0]
