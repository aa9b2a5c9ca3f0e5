"""The forward pass of ``KinetoSpec``'s model on the main thread: convolution stem, batch
norm, ReLU, pooling, transformer blocks (layer norm, linears, flash attention, GELU, residual
adds), the mean and the cross-entropy loss.
"""

from __future__ import annotations

import math

from .pytorch_events import Trace
from .pytorch_spec import BF16, MAIN


def gemm_kernel(t: Trace, layout: str) -> str:
    """cuBLAS's bf16 GEMM kernel on the trace's device; ``layout``: ``tn``, ``nn``."""
    arch = "sm90_xmma" if t.spec.device == "h100" else "ampere"
    return (
        f"{arch}_gemm_bf16bf16_bf16f32_f32_{layout}_n_tilesize128x128x64_warpgroupsize"
        "1x1x1_execute_segment_k_off_kernel__5x_cublas"
    )


def _linear(t: Trace, m: int, n: int, k: int, lead: list[int]) -> None:
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
            t.launch(
                MAIN,
                gemm_kernel(t, "tn"),
                flops,
                2 * (m * k + k * n + m * n),
                "gemm",
                grid=(n // 128 + 1, m // 128 + 1, 1),
            )
        if len(lead) > 1:
            t.leaf(MAIN, "aten::view", [[m, n], []], [BF16, ""])


def elementwise(t: Trace, tid: int, name: str, shapes: list, kernel: str, per: int) -> None:
    out = math.prod(shapes[0])
    types = [
        BF16 if shape else "Scalar" if name.startswith("aten::add") else "" for shape in shapes
    ]
    with t.op(tid, name, shapes, types, None, per * out):
        t.launch(tid, kernel, per * out, 2 * out * (len(shapes) + 1), "memory")


def forward(t: Trace) -> None:
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
            elementwise(
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
        elementwise(
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


def _residual_add(t: Trace, tokens: list[int]) -> None:
    """A transformer block's residual connection: one elementwise add of two activations."""
    kernel = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<"
    elementwise(t, MAIN, "aten::add", [tokens, tokens, []], kernel + "c10::BFloat16>>", 1)


def _layer_norm(t: Trace, x: list[int]) -> None:
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
