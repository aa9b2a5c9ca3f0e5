"""A PyTorch profiler (Kineto) trace of a GPU training run, realistic and deterministic.

``write_trace(path, KinetoSpec(...))`` writes ``*.pt.trace.json[.gz]`` as
``torch.profiler`` with ``record_shapes=True`` and ``tensorboard_trace_handler`` writes it
for one data-parallel worker: ``deviceProperties`` of an H100 or A100, ``distributedInfo``,
and per ``ProfilerStep#N``: the batch copied to the device (``aten::to`` ... ``cudaMemcpyAsync``,
a ``Memcpy HtoD``), the forward on the main thread (a convolution stem, ``cudnn_convolution``,
``cudnn_batch_norm``, ``relu_``, pooling, then transformer blocks: ``layer_norm``, ``linear``
-> ``addmm``, flash attention, ``gelu``, residual ``add``, a mean and a cross-entropy loss),
``loss.item()`` (a ``Memcpy DtoH`` and a synchronize), the backward on the autograd thread
(``autograd::engine::evaluate_function: ...Backward0`` nodes: ``mm``, ``sum``,
``convolution_backward``, flash attention backward...), DDP's gradient all-reduce
(``record_param_comms`` launching NCCL kernels on their own stream) and a fused AdamW step.
Kernel durations follow the op's FLOPs and bytes on the device at a typical efficiency, with
seeded jitter; times are whole nanoseconds written as Kineto writes them (microseconds with
three decimals, relative to ``baseTimeNanoseconds``), so expected values are exact.

Same spec, same bytes: no clock, gzip without a name or time. Events are written one step at
a time, so memory stays small at any size (``steps_for_mb``). ``write_trace`` returns what an
analysis must find: kernel time, kernel count and FLOPs per op name, the steps, memcpy time.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from pathlib import Path
from typing import IO

from .common import PROFILE_START_NS
from .pytorch_backward import backward
from .pytorch_events import Trace
from .pytorch_forward import forward
from .pytorch_spec import AUTOGRAD, COMPUTE, DEVICES, MAIN, NCCL, PID, START_US, KinetoSpec

_DEFAULT = KinetoSpec()  # the demo's run (a frozen spec: one shared default is safe)


def _optimizer(t: Trace) -> None:
    params = t.spec.parameters()
    n = sum(math.prod(p) for p in params)
    steps: list[list[int]] = [[] for _ in params]
    lists = [params, params, params, params, [], steps]
    with t.op(MAIN, "Optimizer.step#AdamW.step", cat="user_annotation"):
        with t.op(
            MAIN,
            "aten::_fused_adamw_",
            lists + [[], [], [], [], [], [], [], [], []],
            ["TensorList"] * 6
            + ["Double", "Double", "Double", "Double", "Double", "Scalar", "Scalar", "", ""],
            None,
            10 * n,
        ):
            for _ in range(2):  # multi_tensor_apply in chunks
                t.launch(
                    MAIN,
                    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel"
                    "<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>"
                    ", at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16"
                    ", 4, (at::native::ADAM_MODE)1, false>>",
                    5 * n,
                    2 * 2 * 5 * n,
                    "memory",
                )


def _buckets(spec: KinetoSpec) -> list[list[list[int]]]:
    """DDP's gradient buckets in the order backward fills them: later layers first."""
    params = spec.parameters()[::-1]
    third = len(params) // 3
    return [params[:third], params[third : 2 * third], params[2 * third :]]


def _step(t: Trace, number: int) -> None:
    s = t.spec
    for tid in (MAIN, AUTOGRAD):  # both threads start the step together
        t.cursor[tid] = max(t.cursor.values())
    begin = t.advance(MAIN, 2000, 5000)
    ext = t.ext
    t.ext += 1
    with t.op(
        MAIN, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", cat="user_annotation"
    ):
        t.advance(MAIN, 150_000, 400_000)  # collating the batch on the host
    image = [s.batch, s.channels, s.image, s.image]
    for shape, kind, size in ((image, "float", 4), ([s.batch], "long int", 8)):
        with t.op(MAIN, "aten::to", [shape, [], [], [], [], []], [kind] + [""] * 5):
            with t.op(MAIN, "aten::_to_copy", [shape, [], [], [], [], [], []], [kind] + [""] * 6):
                t.leaf(MAIN, "aten::empty_strided", [[], [], [], [], [], []], [""] * 6)
                with t.op(MAIN, "aten::copy_", [shape, shape, []], [kind, kind, "Scalar"]):
                    t.memcpy(MAIN, "HtoD", math.prod(shape) * size, sync=False)
    with t.op(MAIN, "Optimizer.zero_grad#AdamW.zero_grad", cat="user_annotation"):
        pass
    with t.op(MAIN, "## forward ##", cat="user_annotation"):
        forward(t)
    with t.op(MAIN, "aten::item", [[]], ["float"]):
        with t.op(MAIN, "aten::_local_scalar_dense", [[]], ["float"]):
            t.memcpy(MAIN, "DtoH", 4, sync=True)
    # loss.backward(): the main thread waits while the autograd thread runs.
    t.cursor[AUTOGRAD] = t.advance(MAIN, 3000, 8000)
    backward(t, _buckets(s))
    t.cursor[MAIN] = max(t.cursor[AUTOGRAD], t.stream[NCCL]) + t.rng.randint(5000, 15000)
    _optimizer(t)
    end = t.advance(MAIN, 20_000, 60_000)
    t.complete(
        "user_annotation",
        f"ProfilerStep#{number}",
        PID,
        MAIN,
        begin,
        end - begin,
        {"External id": ext, "Record function id": 0, "Ev Idx": ext - 1},
    )
    t.flush()


def _header(spec: KinetoSpec) -> str:
    props = dict(DEVICES[spec.device][0], id=0)
    head = {
        "schemaVersion": 1,
        "deviceProperties": [props],
        "distributedInfo": {
            "backend": "nccl",
            "rank": spec.rank,
            "world_size": spec.world_size,
            "pg_count": 1,
            "pg_config": [],
            "nccl_version": "2.21.5",
        },
        "cuda_runtime_version": 12040,
        "cuda_driver_version": 12040,
        "trace_id": f"{0x3FB0C0FFEE + spec.rank:X}",
    }
    meta = [
        {
            "name": "process_name",
            "ph": "M",
            "ts": START_US,
            "pid": PID,
            "tid": 0,
            "args": {"name": f"python {PID}"},
        },
        {
            "name": "thread_name",
            "ph": "M",
            "ts": START_US,
            "pid": PID,
            "tid": MAIN,
            "args": {"name": f"thread {MAIN} (python)"},
        },
        {
            "name": "thread_name",
            "ph": "M",
            "ts": START_US,
            "pid": PID,
            "tid": AUTOGRAD,
            "args": {"name": f"thread {AUTOGRAD} (pt_autograd_0)"},
        },
        {
            "name": "process_name",
            "ph": "M",
            "ts": START_US,
            "pid": 0,
            "tid": 0,
            "args": {"name": "process 0"},
        },
        {
            "name": "process_labels",
            "ph": "M",
            "ts": START_US,
            "pid": 0,
            "tid": 0,
            "args": {"labels": "GPU 0"},
        },
        {
            "name": "thread_name",
            "ph": "M",
            "ts": START_US,
            "pid": 0,
            "tid": COMPUTE,
            "args": {"name": f"stream {COMPUTE} "},
        },
        {
            "name": "thread_name",
            "ph": "M",
            "ts": START_US,
            "pid": 0,
            "tid": NCCL,
            "args": {"name": f"stream {NCCL} "},
        },
    ]
    text = json.dumps(head)[:-1]
    return text + ',\n  "traceEvents": [\n' + ",\n".join(json.dumps(m) for m in meta)


def _write(spec: KinetoSpec, out: IO[str]) -> dict:
    out.write(_header(spec))
    t = Trace(spec, out)
    t.first = False  # after the metadata events
    for step in range(spec.steps):
        _step(t, spec.first_step + step)
    out.write('\n],\n  "traceName": "",\n')
    out.write(f'  "baseTimeNanoseconds": {PROFILE_START_NS}\n}}\n')
    return {
        "device": DEVICES[spec.device][0]["name"],
        "steps": list(range(spec.first_step, spec.first_step + spec.steps)),
        "time_ns": dict(t.time_ns),
        "kernels": dict(t.kernels),
        "flops": dict(t.flops),
        "memcpy_ns": t.memcpy_ns,
    }


def write_trace(path: str | os.PathLike, spec: KinetoSpec = _DEFAULT) -> dict:
    """Writes the trace (gzip when ``path`` ends in ``.gz``; the bytes depend only on the
    spec) and returns ``{"device": name, "steps": [numbers], "time_ns": {op: ns},
    "kernels": {op: n}, "flops": {op: n}, "memcpy_ns": ns}``: per op, its kernels' time and
    count and its executions' FLOPs."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as raw:
        if path.name.endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as packed:
                with io.TextIOWrapper(packed, encoding="utf-8") as text:
                    expected = _write(spec, text)
        else:
            with io.TextIOWrapper(raw, encoding="utf-8") as text:
                expected = _write(spec, text)
    os.replace(partial, path)
    return expected


def trace_file_name(worker: str) -> str:
    """``<worker>.<timestamp>.pt.trace.json.gz``, as ``tensorboard_trace_handler`` names it
    (the timestamp fixed: the demo's start, in ns)."""
    return f"{worker}.{PROFILE_START_NS // 1_000_000}.pt.trace.json.gz"


def steps_for_mb(mb: float, spec: KinetoSpec = _DEFAULT) -> int:
    """Steps for about ``mb`` MB of plain JSON with ``spec``'s model."""
    one = io.StringIO()
    _write(KinetoSpec(**{**spec.__dict__, "steps": 1}), one)
    two = io.StringIO()
    _write(KinetoSpec(**{**spec.__dict__, "steps": 2}), two)
    per_step = len(two.getvalue()) - len(one.getvalue())
    return max(round((mb * 1e6 - len(one.getvalue())) / per_step) + 1, 1)
