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
import random
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from .common import PROFILE_START_NS

BF16 = "c10::BFloat16"
PID = 2_147_001  # the training process
MAIN, AUTOGRAD = 2_147_001, 2_147_113  # its main and autograd threads
COMPUTE, NCCL = 7, 20  # the device's streams
START_US = 1_000_000  # first event, µs after baseTimeNanoseconds
# name: (deviceProperties, bf16 FLOP/s, HBM bytes/s)
DEVICES = {
    "h100": (
        {
            "name": "NVIDIA H100 80GB HBM3",
            "totalGlobalMem": 85045870592,
            "computeMajor": 9,
            "computeMinor": 0,
            "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": 2048,
            "regsPerBlock": 65536,
            "warpSize": 32,
            "sharedMemPerBlock": 49152,
            "numSms": 132,
        },
        989.4e12,
        3.35e12,
    ),
    "a100": (
        {
            "name": "NVIDIA A100-SXM4-80GB",
            "totalGlobalMem": 85097971712,
            "computeMajor": 8,
            "computeMinor": 0,
            "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": 2048,
            "regsPerBlock": 65536,
            "warpSize": 32,
            "sharedMemPerBlock": 49152,
            "numSms": 108,
        },
        312e12,
        2.039e12,
    ),
}
# Fraction of the device's FLOP/s and bandwidth a kernel family reaches.
EFFICIENCY = {
    "gemm": (0.70, 0.8),
    "conv": (0.55, 0.8),
    "attention": (0.45, 0.8),
    "memory": (0.5, 0.75),
    "nccl": (1.0, 0.06),
}


@dataclass(frozen=True)
class KinetoSpec:
    """One worker's trace: a hybrid conv-transformer image classifier trained in bf16.

    Input ``batch`` × ``channels`` × ``image``²; two 3×3 convolutions (stride 1, padding 1,
    no bias) of ``conv_channels`` with batch norm and ReLU, average-pooled to ``grid``² tokens,
    embedded to ``width``, ``layers`` transformer blocks (``heads``, MLP ``mlp``), mean over
    tokens, a linear head of ``classes``. ``first_step``: the number of the first
    ``ProfilerStep`` (2 with ``schedule(wait=1, warmup=1, active=...)``).
    """

    device: str = "h100"
    steps: int = 4
    first_step: int = 2
    rank: int = 0
    world_size: int = 2
    seed: int = 0
    batch: int = 64
    channels: int = 3
    image: int = 32
    conv_channels: tuple[int, int] = (64, 128)
    grid: int = 16
    width: int = 512
    heads: int = 8
    layers: int = 4
    mlp: int = 2048
    classes: int = 1000

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {sorted(DEVICES)}, not {self.device!r}")
        if self.width % self.heads or self.image % self.grid or self.steps < 1:
            raise ValueError("width must divide by heads, image by grid, and steps be >= 1")

    @property
    def tokens(self) -> int:
        return self.grid * self.grid

    def linears(self) -> list[tuple[str, int, int, int]]:
        """(name, rows M, out features N, in features K) of every linear layer, in order."""
        m = self.batch * self.tokens
        out = [("embed", m, self.width, self.conv_channels[-1])]
        for i in range(self.layers):
            out += [
                (f"blocks.{i}.attn.qkv", m, 3 * self.width, self.width),
                (f"blocks.{i}.attn.proj", m, self.width, self.width),
                (f"blocks.{i}.mlp.fc1", m, self.mlp, self.width),
                (f"blocks.{i}.mlp.fc2", m, self.width, self.mlp),
            ]
        return out + [("head", self.batch, self.classes, self.width)]

    def parameters(self) -> list[list[int]]:
        """Shapes of the model's parameters (what DDP all-reduces and AdamW updates)."""
        c0, (c1, c2) = self.channels, self.conv_channels
        shapes = [[c1, c0, 3, 3], [c1], [c1], [c2, c1, 3, 3], [c2], [c2]]
        for _, _, n, k in self.linears():
            shapes += [[n, k], [n]]
        return shapes + [[self.width], [self.width]] * (2 * self.layers)


def _fmt(ns: int) -> float | int:
    """Nanoseconds as Kineto's microseconds (three decimals; whole ones as integers)."""
    return ns // 1000 if ns % 1000 == 0 else ns / 1000


class _Trace:
    """Emits one worker's events step by step; tracks what an analysis must find."""

    def __init__(self, spec: KinetoSpec, out: IO[str]) -> None:
        self.spec, self.out = spec, out
        self.rng = random.Random(spec.seed * 1_000_003 + spec.rank)
        _, self.peak_flops, self.bandwidth = DEVICES[spec.device]
        self.first = True
        self.ext, self.corr = 1, 1
        self.cursor = {MAIN: START_US * 1000, AUTOGRAD: START_US * 1000}
        self.stream = {COMPUTE: START_US * 1000, NCCL: START_US * 1000}
        self.executions: dict[int, list] = {MAIN: [], AUTOGRAD: []}
        self.time_ns: dict[str, int] = defaultdict(int)
        self.kernels: dict[str, int] = defaultdict(int)
        self.flops: dict[str, float] = defaultdict(float)
        self.memcpy_ns = 0
        self.events: list[dict] = []

    # --- writing ---------------------------------------------------------------------

    def emit(self, event: dict) -> None:
        self.events.append(event)

    def flush(self) -> None:
        for event in self.events:
            self.out.write(("" if self.first else ",\n") + json.dumps(event))
            self.first = False
        self.events.clear()

    def _x(self, cat: str, name: str, pid, tid, begin: int, dur: int, args: dict) -> None:
        self.emit(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": pid,
                "tid": tid,
                "ts": _fmt(begin),
                "dur": _fmt(dur),
                "args": args,
            }
        )

    def advance(self, tid: int, low: int, high: int) -> int:
        self.cursor[tid] += self.rng.randint(low, high)
        return self.cursor[tid]

    # --- ops and kernels -------------------------------------------------------------

    @contextmanager
    def op(
        self,
        tid: int,
        name: str,
        dims=None,
        types=None,
        concrete=None,
        flops: float = 0,
        cat: str = "cpu_op",
        extra: dict | None = None,
    ) -> Iterator[None]:
        """A CPU op on thread ``tid`` spanning what runs inside; ``flops``: one execution's
        (counted when the op launches a kernel, as an analysis counts it)."""
        begin = self.advance(tid, 1500, 4000)
        ext = self.ext
        self.ext += 1
        counted = cat == "cpu_op"  # kernels belong to cpu ops, not to annotations
        if counted:
            self.executions[tid].append([name, flops, False, ext])
        try:
            yield
        finally:
            if counted:
                _, _, launched, _ = self.executions[tid].pop()
                if launched:
                    self.flops[name] += flops
            end = self.advance(tid, 800, 2500)
            args: dict = {"External id": ext, "Record function id": 0, "Ev Idx": ext - 1}
            if dims is not None:
                args["Input Dims"] = dims
                args["Input type"] = types
                args["Input Strides"] = [_strides(d) for d in dims]
                if concrete is not None:
                    args["Concrete Inputs"] = concrete
            args.update(extra or {})
            self._x(cat, name, PID, tid, begin, end - begin, args)

    def leaf(self, tid: int, name: str, dims=None, types=None) -> None:
        """A CPU op without kernels (views, transposes, ``aten::empty``)."""
        with self.op(tid, name, dims, types):
            pass

    def launch(
        self,
        tid: int,
        kernel: str,
        flops: float,
        nbytes: float,
        family: str,
        stream: int = COMPUTE,
        grid=(1024, 1, 1),
        block=(256, 1, 1),
    ) -> None:
        """``cudaLaunchKernel`` on ``tid`` and the kernel it queues, timed from its FLOPs and
        bytes; the kernel belongs to the innermost op open on ``tid``."""
        eff_flops, eff_bw = EFFICIENCY[family]
        ideal = max(flops / (self.peak_flops * eff_flops), nbytes / (self.bandwidth * eff_bw))
        dur = max(int(ideal * 1e9 * self.rng.uniform(0.96, 1.08)), self.rng.randint(1400, 2600))
        begin = self.advance(tid, 1000, 3000)
        call = self.rng.randint(2500, 5500)
        corr = self.corr
        self.corr += 1
        owner = self.executions[tid][-1]
        ext = owner[3]
        self._x(
            "cuda_runtime",
            "cudaLaunchKernel",
            PID,
            tid,
            begin,
            call,
            {"External id": ext, "cbid": 211, "correlation": corr},
        )
        self.cursor[tid] = begin + call
        start = max(self.stream[stream], begin + self.rng.randint(4000, 9000))
        self.stream[stream] = start + dur + self.rng.randint(900, 2200)
        self._x(
            "kernel",
            kernel,
            0,
            stream,
            start,
            dur,
            {
                "External id": ext,
                "queued": 0,
                "device": 0,
                "context": 1,
                "stream": stream,
                "correlation": corr,
                "registers per thread": 128,
                "shared memory": 49152,
                "blocks per SM": 1.2,
                "warps per SM": 9.7,
                "grid": list(grid),
                "block": list(block),
                "est. achieved occupancy %": 25,
            },
        )
        self.time_ns[owner[0]] += dur
        self.kernels[owner[0]] += 1
        owner[2] = True

    def memcpy(self, tid: int, kind: str, nbytes: int, sync: bool) -> None:
        """``cudaMemcpyAsync`` and its copy (listed apart by an analysis)."""
        begin = self.advance(tid, 1000, 3000)
        call = self.rng.randint(3000, 8000)
        corr = self.corr
        self.corr += 1
        self._x(
            "cuda_runtime",
            "cudaMemcpyAsync",
            PID,
            tid,
            begin,
            call,
            {"External id": self.executions[tid][-1][3], "cbid": 41, "correlation": corr},
        )
        start = max(self.stream[COMPUTE], begin + self.rng.randint(3000, 6000))
        dur = max(int(nbytes / 24e9 * 1e9), 1200) + self.rng.randint(0, 600)  # PCIe
        self.stream[COMPUTE] = start + dur + 1000
        names = {"HtoD": "Memcpy HtoD (Pinned -> Device)", "DtoH": "Memcpy DtoH (Device -> Pinned)"}
        self._x(
            "gpu_memcpy",
            names[kind],
            0,
            COMPUTE,
            start,
            dur,
            {
                "External id": self.executions[tid][-1][3],
                "device": 0,
                "context": 1,
                "stream": COMPUTE,
                "correlation": corr,
                "bytes": nbytes,
                "memory bandwidth (GB/s)": round(nbytes / dur, 3),
            },
        )
        self.memcpy_ns += dur
        self.cursor[tid] = begin + call
        if sync:  # cudaStreamSynchronize: the host waits for the device
            begin = self.advance(tid, 500, 1500)
            end = max(begin + 2000, self.stream[COMPUTE] + 1500)
            corr = self.corr
            self.corr += 1
            self._x(
                "cuda_runtime",
                "cudaStreamSynchronize",
                PID,
                tid,
                begin,
                end - begin,
                {"External id": self.executions[tid][-1][3], "cbid": 131, "correlation": corr},
            )
            self.cursor[tid] = end
        else:
            self.cursor[tid] = begin + call


def _strides(dims) -> list:
    if not isinstance(dims, list) or any(not isinstance(d, int) for d in dims):
        return []
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]


# --- the model ------------------------------------------------------------------------


def _linear(t: _Trace, m: int, n: int, k: int, lead: list[int]) -> None:
    with t.op(MAIN, "aten::linear", [lead + [k], [n, k], [n]], [BF16] * 3):
        t.leaf(MAIN, "aten::t", [[n, k]], [BF16])
        flops = 2 * m * n * k
        with t.op(
            MAIN,
            "aten::addmm",
            [[n], [m, k], [k, n], [], []],
            [BF16] * 3 + ["Scalar", "Scalar"],
            ["", "", "", "1", "1"],
            flops,
        ):
            arch = "sm90_xmma" if t.spec.device == "h100" else "ampere"
            kernel = (
                f"{arch}_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize"
                "1x1x1_execute_segment_k_off_kernel__5x_cublas"
            )
            t.launch(
                MAIN,
                kernel,
                flops,
                2 * (m * k + k * n + m * n),
                "gemm",
                grid=(n // 128 + 1, m // 128 + 1, 1),
            )
        if len(lead) > 1:
            t.leaf(MAIN, "aten::view", [[m, n], []], [BF16, ""])


def _elementwise(t: _Trace, tid: int, name: str, shapes: list, kernel: str, per: int) -> None:
    out = math.prod(shapes[0])
    types = [
        BF16 if shape else "Scalar" if name.startswith("aten::add") else "" for shape in shapes
    ]
    with t.op(tid, name, shapes, types, None, per * out):
        t.launch(tid, kernel, per * out, 2 * out * (len(shapes) + 1), "memory")


def _forward(t: _Trace) -> None:
    s = t.spec
    b, hw = s.batch, s.image
    c_in = s.channels
    for c_out in s.conv_channels:
        x, w = [b, c_in, hw, hw], [c_out, c_in, 3, 3]
        flops = 2 * b * c_out * hw * hw * c_in * 9
        with t.op(
            MAIN,
            "aten::conv2d",
            [x, w, [], [], [], [], []],
            [BF16, BF16] + [""] * 5,
            ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"],
        ):
            with t.op(
                MAIN,
                "aten::convolution",
                [x, w, [], [], [], [], [], [], []],
                [BF16, BF16] + [""] * 7,
            ):
                with t.op(MAIN, "aten::_convolution", [x, w] + [[]] * 11, [BF16, BF16] + [""] * 11):
                    with t.op(
                        MAIN,
                        "aten::cudnn_convolution",
                        [x, w] + [[]] * 7,
                        [BF16, BF16] + ["", "", "", "Scalar", "Scalar", "Scalar", "Scalar"],
                        ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "1", "False", "False", "True"],
                        flops,
                    ):
                        t.leaf(MAIN, "aten::empty", [[], [], [], [], [], []], [""] * 6)
                        t.launch(
                            MAIN,
                            "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_"
                            "nhwckrsc_nhwc_tilesize128x128x64_stage4_warpsize2x2x1_g1_"
                            "tensor16x8x16_kernel_cudnn",
                            flops,
                            2 * (math.prod(x) + math.prod(w) + b * c_out * hw * hw),
                            "conv",
                        )
        y = [b, c_out, hw, hw]
        with t.op(
            MAIN,
            "aten::batch_norm",
            [y, [c_out], [c_out], [c_out], [c_out], [], [], [], []],
            [BF16] + ["float"] * 4 + ["Scalar"] * 4,
        ):
            with t.op(
                MAIN,
                "aten::_batch_norm_impl_index",
                [y, [c_out], [c_out], [c_out], [c_out], [], [], [], []],
                [BF16] + ["float"] * 4 + ["Scalar"] * 4,
            ):
                n = math.prod(y)
                with t.op(
                    MAIN,
                    "aten::cudnn_batch_norm",
                    [y, [c_out], [c_out], [c_out], [c_out], [], [], []],
                    [BF16] + ["float"] * 4 + ["Scalar"] * 3,
                    None,
                    5 * n,
                ):
                    t.launch(
                        MAIN,
                        "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__nv_bfloat16, float, "
                        "int, 512, true, 1, true>",
                        5 * n,
                        4 * n,
                        "memory",
                    )
        with t.op(MAIN, "aten::relu_", [y], [BF16]):
            _elementwise(
                t,
                MAIN,
                "aten::clamp_min_",
                [y],
                "void at::native::vectorized_"
                "elementwise_kernel<4, at::native::launch_clamp_scalar>",
                1,
            )
        c_in = c_out
    pooled = [b, c_in, s.grid, s.grid]
    x = [b, c_in, hw, hw]
    with t.op(MAIN, "aten::adaptive_avg_pool2d", [x, []], [BF16, ""]):
        with t.op(MAIN, "aten::_adaptive_avg_pool2d", [x, []], [BF16, ""], None, math.prod(x)):
            t.launch(
                MAIN,
                "void at::native::(anonymous namespace)::adaptive_average_pool<c10::BFloat16>",
                math.prod(x),
                2 * math.prod(x),
                "memory",
            )
    t.leaf(MAIN, "aten::flatten", [pooled, [], []], [BF16, "Scalar", "Scalar"])
    t.leaf(MAIN, "aten::transpose", [[b, c_in, s.tokens], [], []], [BF16, "Scalar", "Scalar"])
    tokens = [b, s.tokens, s.width]
    m = b * s.tokens
    linears = iter(s.linears())
    _, m, n, k = next(linears)
    _linear(t, m, n, k, [b, s.tokens])
    h = s.heads
    e = s.width // h
    for _ in range(s.layers):
        _layer_norm(t, tokens)
        _, m, n, k = next(linears)
        _linear(t, m, n, k, [b, s.tokens])
        t.leaf(MAIN, "aten::view", [[b, s.tokens, n], []], [BF16, ""])
        t.leaf(MAIN, "aten::unbind", [[3, b, h, s.tokens, e], []], [BF16, "Scalar"])
        q = [b, h, s.tokens, e]
        with t.op(
            MAIN,
            "aten::scaled_dot_product_attention",
            [q, q, q, [], [], [], []],
            [BF16] * 3 + ["", "Scalar", "Scalar", ""],
        ):
            with t.op(
                MAIN,
                "aten::_scaled_dot_product_flash_attention",
                [q, q, q, [], [], []],
                [BF16] * 3 + ["Scalar", "Scalar", ""],
            ):
                qt = [b, s.tokens, h, e]
                flops = 4 * b * h * s.tokens * s.tokens * e
                with t.op(
                    MAIN,
                    "aten::_flash_attention_forward",
                    [qt, qt, qt, [], [], [], [], [], [], [], []],
                    [BF16] * 3 + [""] * 4 + ["Scalar", "Scalar", "Scalar", ""],
                    None,
                    flops,
                ):
                    t.leaf(MAIN, "aten::empty_like", [qt, [], [], [], [], []], [BF16] + [""] * 5)
                    t.launch(
                        MAIN,
                        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits"
                        f"<{e}, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, false, "
                        "false, false, true, true, false>(pytorch_flash::Flash_fwd_params)",
                        flops,
                        8 * math.prod(q),
                        "attention",
                        grid=(s.tokens // 128, b, h),
                    )
        _, m, n, k = next(linears)
        _linear(t, m, n, k, [b, s.tokens])
        _residual_add(t, tokens)
        _layer_norm(t, tokens)
        _, m, n, k = next(linears)
        _linear(t, m, n, k, [b, s.tokens])
        _elementwise(
            t,
            MAIN,
            "aten::gelu",
            [[b, s.tokens, s.mlp], []],
            "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
            8,
        )
        _, m, n, k = next(linears)
        _linear(t, m, n, k, [b, s.tokens])
        _residual_add(t, tokens)
    n = math.prod(tokens)
    with t.op(MAIN, "aten::mean", [tokens, [], [], []], [BF16, "", "Scalar", ""], None, n):
        t.launch(
            MAIN,
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::"
            "BFloat16, at::native::MeanOps<float, float, float, float>>>",
            n,
            2 * n,
            "memory",
        )
    _, m, n, k = next(linears)
    _linear(t, m, n, k, [b])
    logits = [b, s.classes]
    with t.op(
        MAIN,
        "aten::cross_entropy_loss",
        [logits, [b], [], [], [], []],
        [BF16, "long int", "", "Scalar", "Scalar", "Scalar"],
    ):
        with t.op(MAIN, "aten::log_softmax", [logits, [], []], [BF16, "Scalar", ""]):
            n = math.prod(logits)
            with t.op(
                MAIN,
                "aten::_log_softmax",
                [logits, [], []],
                [BF16, "Scalar", "Scalar"],
                None,
                5 * n,
            ):
                t.launch(
                    MAIN,
                    "void (anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16,"
                    " float, c10::BFloat16, LogSoftMaxForwardEpilogue>",
                    5 * n,
                    4 * n,
                    "memory",
                )
        with t.op(
            MAIN,
            "aten::nll_loss_nd",
            [logits, [b], [], [], []],
            [BF16, "long int", "", "Scalar", "Scalar"],
        ):
            with t.op(
                MAIN,
                "aten::nll_loss",
                [logits, [b], [], [], []],
                [BF16, "long int", "", "Scalar", "Scalar"],
            ):
                with t.op(
                    MAIN,
                    "aten::nll_loss_forward",
                    [logits, [b], [], [], []],
                    [BF16, "long int", "", "Scalar", "Scalar"],
                    None,
                    n,
                ):
                    t.launch(
                        MAIN,
                        "void at::native::(anonymous namespace)::nll_loss_forward_"
                        "reduce_cuda_kernel_2d<c10::BFloat16, float, long>",
                        n,
                        2 * n,
                        "memory",
                    )


def _residual_add(t: _Trace, tokens: list[int]) -> None:
    """A transformer block's residual connection: one elementwise add of two activations."""
    kernel = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<"
    _elementwise(t, MAIN, "aten::add", [tokens, tokens, []], kernel + "c10::BFloat16>>", 1)


def _layer_norm(t: _Trace, x: list[int]) -> None:
    d = x[-1]
    with t.op(
        MAIN,
        "aten::layer_norm",
        [x, [], [d], [d], [], []],
        [BF16, "", BF16, BF16, "Scalar", "Scalar"],
    ):
        n = math.prod(x)
        with t.op(
            MAIN,
            "aten::native_layer_norm",
            [x, [], [d], [d], []],
            [BF16, "", BF16, BF16, "Scalar"],
            None,
            5 * n,
        ):
            t.launch(
                MAIN,
                "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel"
                "<c10::BFloat16, float>",
                5 * n,
                4 * n,
                "memory",
            )


@contextmanager
def _node(t: _Trace, name: str) -> Iterator[None]:
    with t.op(AUTOGRAD, f"autograd::engine::evaluate_function: {name}"):
        with t.op(AUTOGRAD, name):
            yield


def _linear_backward(t: _Trace, m: int, n: int, k: int) -> None:
    arch = "sm90_xmma" if t.spec.device == "h100" else "ampere"
    with _node(t, "AddmmBackward0"):
        t.leaf(AUTOGRAD, "aten::t", [[k, n]], [BF16])
        for name, a, bb in (("nn", [m, n], [n, k]), ("tn", [n, m], [m, k])):
            flops = 2 * a[0] * a[1] * bb[1]
            with t.op(AUTOGRAD, "aten::mm", [a, bb], [BF16, BF16], None, flops):
                t.launch(
                    AUTOGRAD,
                    f"{arch}_gemm_bf16bf16_bf16f32_f32_{name}_n_tilesize128x128x64"
                    "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                    flops,
                    2 * (a[0] * a[1] + bb[0] * bb[1] + a[0] * bb[1]),
                    "gemm",
                )
        with t.op(
            AUTOGRAD, "aten::sum", [[m, n], [], [], []], [BF16, "", "Scalar", ""], None, m * n
        ):
            t.launch(
                AUTOGRAD,
                "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::"
                "BFloat16, at::native::func_wrapper_t<float, at::native::sum_functor>>>",
                m * n,
                2 * m * n,
                "memory",
            )


def _backward_elementwise(
    t: _Trace, node: str, name: str, shapes: list, kernel: str, per: int
) -> None:
    with _node(t, node):
        _elementwise(t, AUTOGRAD, name, shapes, kernel, per)


def _backward(t: _Trace, buckets: list[list[list[int]]]) -> None:
    s = t.spec
    b = s.batch
    logits = [b, s.classes]
    n = math.prod(logits)
    with t.op(AUTOGRAD, "aten::ones_like", [[], [], [], [], [], []], ["float"] + [""] * 5):
        with t.op(AUTOGRAD, "aten::fill_", [[], []], ["float", "Scalar"]):
            t.launch(
                AUTOGRAD,
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
                0,
                4,
                "memory",
            )
    with _node(t, "NllLossBackward0"):
        with t.op(
            AUTOGRAD,
            "aten::nll_loss_backward",
            [[], logits, [b], [], [], [], []],
            ["float", BF16, "long int", "", "Scalar", "Scalar", "float"],
        ):
            t.launch(
                AUTOGRAD,
                "void at::native::(anonymous namespace)::nll_loss_backward_reduce"
                "_cuda_kernel_2d<c10::BFloat16, long>",
                0,
                2 * n,
                "memory",
            )
    with _node(t, "LogSoftmaxBackward0"):
        with t.op(
            AUTOGRAD,
            "aten::_log_softmax_backward_data",
            [logits, logits, [], []],
            [BF16, BF16, "Scalar", "Scalar"],
            None,
            5 * n,
        ):
            t.launch(
                AUTOGRAD,
                "void (anonymous namespace)::cunn_SoftMaxBackward<4, c10::BFloat16,"
                " float, c10::BFloat16, LogSoftMaxBackwardEpilogue>",
                5 * n,
                6 * n,
                "memory",
            )
    linears = s.linears()[::-1]
    grads = iter(buckets)
    _linear_backward(t, *linears[0][1:])
    tokens = [b, s.tokens, s.width]
    _backward_elementwise(
        t,
        "MeanBackward1",
        "aten::div",
        [tokens, []],
        "void at::native::unrolled_elementwise_kernel<at::native::BinaryFunctor<c10::BFloat16>>",
        1,
    )
    h, e = s.heads, s.width // s.heads
    for i in range(s.layers):
        fc2, fc1, proj, qkv = linears[1 + 4 * i : 5 + 4 * i]
        _linear_backward(t, *fc2[1:])
        _backward_elementwise(
            t,
            "GeluBackward0",
            "aten::gelu_backward",
            [[b, s.tokens, s.mlp], [b, s.tokens, s.mlp]],
            "void at::native::vectorized_elementwise_kernel<4, GeluBackwardCUDAKernelImpl>",
            10,
        )
        _linear_backward(t, *fc1[1:])
        _layer_norm_backward(t, tokens)
        _linear_backward(t, *proj[1:])
        qt = [b, s.tokens, h, e]
        flops = 10 * b * h * s.tokens * s.tokens * e  # 2.5 × the forward's 4·B·H·L²·E
        with _node(t, "ScaledDotProductFlashAttentionBackward0"):
            q = [b, h, s.tokens, e]
            with t.op(
                AUTOGRAD,
                "aten::_scaled_dot_product_flash_attention_backward",
                [q, q, q, q, q, [b, h, s.tokens]] + [[]] * 8,
                [BF16] * 5 + ["float"] + [""] * 8,
            ):
                with t.op(
                    AUTOGRAD,
                    "aten::_flash_attention_backward",
                    [qt, qt, qt, qt, qt, [b, h, s.tokens]] + [[]] * 9,
                    [BF16] * 5 + ["float"] + [""] * 9,
                    None,
                    flops,
                ):
                    for kernel, share in (
                        ("flash_bwd_dot_do_o_kernel", 0.0),
                        ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", 1.0),
                        ("flash_bwd_convert_dq_kernel", 0.0),
                    ):
                        t.launch(
                            AUTOGRAD,
                            f"void pytorch_flash::{kernel}<Flash_bwd_kernel_traits"
                            f"<{e}, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>>"
                            "(pytorch_flash::Flash_bwd_params)",
                            share * flops,
                            4 * math.prod(q),
                            "attention",
                        )
        _linear_backward(t, *qkv[1:])
        _layer_norm_backward(t, tokens)
        if i == s.layers // 2 - 1 or i == s.layers - 1:
            _all_reduce(t, next(grads))
    _linear_backward(t, *linears[-1][1:])
    hw = s.image
    c1, c2 = s.conv_channels
    pooled_from = [b, c2, hw, hw]
    with _node(t, "AdaptiveAvgPool2DBackward0"):
        with t.op(
            AUTOGRAD,
            "aten::_adaptive_avg_pool2d_backward",
            [[b, c2, s.grid, s.grid], pooled_from],
            [BF16, BF16],
        ):
            t.launch(
                AUTOGRAD,
                "void at::native::(anonymous namespace)::adaptive_average_gradinput<c10::BFloat16>",
                0,
                2 * math.prod(pooled_from),
                "memory",
            )
    for c_in, c_out in ((c1, c2), (s.channels, c1)):
        y = [b, c_out, hw, hw]
        _backward_elementwise(
            t,
            "ReluBackward0",
            "aten::threshold_backward",
            [y, y, []],
            "void at::native::vectorized_elementwise_kernel<4, at::native::"
            "threshold_kernel_impl<c10::BFloat16>>",
            1,
        )
        n = math.prod(y)
        with _node(t, "CudnnBatchNormBackward0"):
            with t.op(
                AUTOGRAD,
                "aten::cudnn_batch_norm_backward",
                [y, y, [c_out], [c_out], [c_out], [c_out], [c_out], [], [0]],
                [BF16, BF16] + ["float"] * 5 + ["Scalar", "unsigned char"],
                None,
                8 * n,
            ):
                t.launch(
                    AUTOGRAD,
                    "void cudnn::bn_bw_1C11_kernel_new<__nv_bfloat16, float, "
                    "float2, 512, true, 1, true>",
                    8 * n,
                    6 * n,
                    "memory",
                )
        x, w = [b, c_in, hw, hw], [c_out, c_in, 3, 3]
        first = c_in == s.channels  # the input needs no gradient
        mask = "[False, True, False]" if first else "[True, True, False]"
        forward = 2 * b * c_out * hw * hw * c_in * 9
        flops = forward * (1 if first else 2)
        with _node(t, "ConvolutionBackward0"):
            with t.op(
                AUTOGRAD,
                "aten::convolution_backward",
                [y, x, w] + [[]] * 8,
                [BF16] * 3 + [""] * 6 + ["Scalar", ""],
                ["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", mask],
                flops,
            ):
                size = 2 * (math.prod(x) + math.prod(w) + math.prod(y))
                if not first:
                    t.launch(
                        AUTOGRAD,
                        "sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc"
                        "_nhwc_tilesize128x128x64_stage4_warpsize2x2x1_g1_tensor16x8x16_"
                        "kernel_cudnn",
                        forward,
                        size,
                        "conv",
                    )
                t.launch(
                    AUTOGRAD,
                    "sm80_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_"
                    "nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel"
                    "_cudnn",
                    forward,
                    size,
                    "conv",
                )
    _all_reduce(t, next(grads))


def _layer_norm_backward(t: _Trace, x: list[int]) -> None:
    d, n = x[-1], math.prod(x)
    with _node(t, "NativeLayerNormBackward0"):
        with t.op(
            AUTOGRAD,
            "aten::native_layer_norm_backward",
            [x, x, [], [x[0], x[1], 1], [x[0], x[1], 1], [d], [d], []],
            [BF16, BF16, "", "float", "float", BF16, BF16, ""],
            None,
            8 * n,
        ):
            t.launch(
                AUTOGRAD,
                "void at::native::(anonymous namespace)::layer_norm_grad_input_"
                "kernel_vectorized<c10::BFloat16, float, true>",
                8 * n,
                6 * n,
                "memory",
            )


def _all_reduce(t: _Trace, shapes: list[list[int]]) -> None:
    """DDP's all-reduce of one gradient bucket, launched from the autograd thread."""
    count = sum(math.prod(p) for p in shapes)
    world = t.spec.world_size
    extra = {
        "Collective name": "allreduce",
        "dtype": "BFloat16",
        "In msg nelems": count,
        "Out msg nelems": count,
        "Group size": world,
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
        "Process Group Ranks": str(list(range(world))),
    }
    with t.op(
        AUTOGRAD, "record_param_comms", [[[count]], [], []], ["TensorList", "", "Int"], extra=extra
    ):
        with t.op(AUTOGRAD, "nccl:all_reduce", [[count]], [BF16], cat="user_annotation"):
            nbytes = 2 * count * 2 * (world - 1) / world  # ring: reduce-scatter + all-gather
            t.launch(
                AUTOGRAD,
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                0,
                nbytes,
                "nccl",
                stream=NCCL,
                grid=(16, 1, 1),
                block=(512, 1, 1),
            )


def _optimizer(t: _Trace) -> None:
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


def _step(t: _Trace, number: int) -> None:
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
        _forward(t)
    with t.op(MAIN, "aten::item", [[]], ["float"]):
        with t.op(MAIN, "aten::_local_scalar_dense", [[]], ["float"]):
            t.memcpy(MAIN, "DtoH", 4, sync=True)
    # loss.backward(): the main thread waits while the autograd thread runs.
    t.cursor[AUTOGRAD] = t.advance(MAIN, 3000, 8000)
    _backward(t, _buckets(s))
    t.cursor[MAIN] = max(t.cursor[AUTOGRAD], t.stream[NCCL]) + t.rng.randint(5000, 15000)
    _optimizer(t)
    end = t.advance(MAIN, 20_000, 60_000)
    t._x(
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
    t = _Trace(spec, out)
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


def write_trace(path: str | os.PathLike, spec: KinetoSpec = KinetoSpec()) -> dict:
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


def steps_for_mb(mb: float, spec: KinetoSpec = KinetoSpec()) -> int:
    """Steps for about ``mb`` MB of plain JSON with ``spec``'s model."""
    one = io.StringIO()
    _write(KinetoSpec(**{**spec.__dict__, "steps": 1}), one)
    two = io.StringIO()
    _write(KinetoSpec(**{**spec.__dict__, "steps": 2}), two)
    per_step = len(two.getvalue()) - len(one.getvalue())
    return max(round((mb * 1e6 - len(one.getvalue())) / per_step) + 1, 1)
