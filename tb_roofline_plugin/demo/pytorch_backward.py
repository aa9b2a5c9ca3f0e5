"""The backward pass on the autograd thread (``autograd::engine::evaluate_function`` nodes,
from the loss back to the first convolution) and DDP's all-reduce of each gradient bucket.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator

from .pytorch_events import Trace
from .pytorch_forward import elementwise, gemm_kernel
from .pytorch_spec import AUTOGRAD, BF16, NCCL


@contextmanager
def _node(t: Trace, name: str) -> Iterator[None]:
    with t.op(AUTOGRAD, f"autograd::engine::evaluate_function: {name}"):
        with t.op(AUTOGRAD, name):
            yield


def _linear_backward(t: Trace, m: int, n: int, k: int) -> None:
    with _node(t, "AddmmBackward0"):
        t.leaf(AUTOGRAD, "aten::t", [[k, n]], [BF16])
        for name, a, bb in (("nn", [m, n], [n, k]), ("tn", [n, m], [m, k])):
            flops = 2 * a[0] * a[1] * bb[1]
            with t.op(AUTOGRAD, "aten::mm", [a, bb], [BF16, BF16], None, flops):
                t.launch(
                    AUTOGRAD,
                    gemm_kernel(t, name),
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
    t: Trace, node: str, name: str, shapes: list, kernel: str, per: int
) -> None:
    with _node(t, node):
        elementwise(t, AUTOGRAD, name, shapes, kernel, per)


def backward(t: Trace, buckets: list[list[list[int]]]) -> None:
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


def _layer_norm_backward(t: Trace, x: list[int]) -> None:
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


def _all_reduce(t: Trace, shapes: list[list[int]]) -> None:
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
