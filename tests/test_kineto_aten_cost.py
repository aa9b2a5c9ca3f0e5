"""The aten cost model, op by op, against counts worked out by hand."""

from __future__ import annotations

from tb_roofline_plugin.kineto.aten_cost import ConvShapes, OpArgs, category, conv_shapes, op_cost

F32 = "float"
BF16 = "c10::BFloat16"


def cost(name, dims, types, concrete=(), flops=0.0):
    return op_cost(name, OpArgs(list(dims), list(types), list(concrete)), flops)


def test_mm_is_2mnk_and_reads_both_operands():
    c = cost("aten::mm", [[64, 128], [128, 32]], [F32, F32])
    assert c.flops == 2 * 64 * 32 * 128
    assert c.bytes_accessed == (64 * 128 + 128 * 32 + 64 * 32) * 4
    assert c.bytes_written == 64 * 32 * 4 and c.dtype == "fp32"


def test_addmm_takes_its_operands_after_the_bias():
    c = cost("aten::addmm", [[256], [32, 512], [512, 256], [], []], [F32] * 3 + ["Scalar"] * 2)
    assert c.flops == 2 * 32 * 512 * 256
    assert c.bytes_accessed == (256 + 32 * 512 + 512 * 256 + 32 * 256) * 4


def test_bmm_and_baddbmm_multiply_by_the_batch():
    assert cost("aten::bmm", [[1024, 96, 50], [1024, 50, 8]], [F32] * 2).flops == (
        2 * 1024 * 96 * 8 * 50
    )
    c = cost("aten::baddbmm", [[4, 8, 16], [4, 8, 32], [4, 32, 16]], [BF16] * 3)
    assert c.flops == 2 * 4 * 8 * 16 * 32 and c.dtype == "bf16"


def test_matmul_broadcasts_batch_dims_and_linear_flattens_leading_dims():
    assert cost("aten::matmul", [[2, 3, 10, 20], [20, 5]], [F32] * 2).flops == 2 * 6 * 10 * 5 * 20
    c = cost("aten::linear", [[8, 16, 64], [128, 64], [128]], [BF16] * 3)
    assert c.flops == 2 * (8 * 16) * 128 * 64
    assert c.bytes_accessed == (8 * 16 * 64 + 128 * 64 + 128 + 8 * 16 * 128) * 2


def test_conv2d_output_size_follows_stride_padding_dilation():
    # 1x3x32x32 input, 8 filters 3x3, stride 2, padding 1: 16x16 output.
    c = cost(
        "aten::conv2d",
        [[1, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], []],
        [F32, F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar"],
        ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"],
    )
    assert c.flops == 2 * 1 * 8 * 16 * 16 * 3 * 9


def test_grouped_and_mkldnn_convolutions():
    # Depthwise: 16 groups, weight [16, 1, 3, 3]: C_in/groups = 1 per output channel.
    c = cost(
        "aten::convolution",
        [[2, 16, 8, 8], [16, 1, 3, 3], [], [], [], [], [], [], []],
        [F32, F32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
        ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "16"],
    )
    assert c.flops == 2 * 2 * 16 * 6 * 6 * 1 * 9
    # mkldnn order is (padding, stride): padding 1, stride 1 keeps 32x32.
    c = cost(
        "aten::mkldnn_convolution",
        [[32, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []],
        [F32, F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar"],
        ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"],
    )
    assert c.flops == 2 * 32 * 16 * 32 * 32 * 3 * 9 == 28_311_552


def test_cudnn_convolution_reads_padding_then_stride_and_the_old_schema_with_a_bias():
    # Since PyTorch 1.11: (self, weight, padding, stride, dilation, groups, benchmark, ...).
    # 1x3x32x32, 8 filters 3x3, padding 0, stride 2: (32 - 3) // 2 + 1 = 15 per side.
    c = cost(
        "aten::cudnn_convolution",
        [[1, 3, 32, 32], [8, 3, 3, 3], [], [], [], [], [], [], []],
        [F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", ""],
        ["", "", "[0, 0]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"],
    )
    assert c.flops == 2 * 1 * 8 * 15 * 15 * 3 * 9
    # Before: (self, weight, bias, padding, stride, dilation, groups, benchmark, deterministic).
    c = cost(
        "aten::cudnn_convolution",
        [[1, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], [], [], []],
        [F32, F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar"],
        ["", "", "", "[0, 0]", "[2, 2]", "[1, 1]", "1", "False", "False"],
    )
    assert c.flops == 2 * 1 * 8 * 15 * 15 * 3 * 9


def test_convolution_backward_counts_the_gradients_the_mask_asks_for():
    dims = [[32, 16, 32, 32], [32, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], [], [], [], []]
    types = [F32] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"]
    forward = 2 * 32 * 16 * 32 * 32 * 3 * 9
    concrete = ["", "", "", "[16]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    both = cost("aten::convolution_backward", dims, types, [*concrete, "[True, True, True]"])
    weight_only = cost(
        "aten::convolution_backward", dims, types, [*concrete, "[False, True, True]"]
    )
    grad_bias = 32 * 16 * 32 * 32  # a sum over grad_output per output channel
    assert both.flops == 2 * forward + grad_bias
    assert weight_only.flops == forward + grad_bias


def test_attention_forward_and_backward():
    q = [2, 8, 128, 64]  # (B, H, L, E)
    fwd = cost("aten::_scaled_dot_product_flash_attention", [q, q, q], [BF16] * 3)
    assert fwd.flops == 2 * 2 * 8 * 128 * 128 * (64 + 64)
    assert fwd.dtype == "bf16"
    flash = cost("aten::_flash_attention_forward", [[2, 128, 8, 64]] * 3, [BF16] * 3)
    assert flash.flops == fwd.flops  # (B, L, H, E) layout
    bwd = cost("aten::_scaled_dot_product_flash_attention_backward", [q, q, q, q], [BF16] * 4)
    assert bwd.flops == 2.5 * fwd.flops


def test_elementwise_broadcast_and_activations():
    c = cost("aten::add", [[32, 256], [256], []], [F32, F32, "Scalar"])
    assert c.flops == 32 * 256
    assert c.bytes_accessed == (32 * 256 + 256 + 32 * 256) * 4
    assert cost("aten::relu", [[10, 10]], [F32]).flops == 100
    assert cost("aten::gelu", [[10, 10]], [F32]).flops == 800
    copy = cost("aten::copy_", [[4, 4], [4, 4], []], [F32, F32, "Scalar"])
    assert copy.flops == 0 and copy.bytes_accessed == 2 * 16 * 4  # self is written, not read
    assert category("aten::copy_") == "memory copy"


def test_reductions_softmax_and_norms():
    assert cost("aten::sum", [[8, 1024], [], []], [F32, "ScalarList", "Scalar"]).flops == 8192
    s = cost("aten::_softmax", [[4, 100], [], []], [F32, "Scalar", "Scalar"])
    assert s.flops == 5 * 400 and s.bytes_accessed == 2 * 400 * 4
    ln = cost("aten::native_layer_norm", [[16, 512], [], [512], [512], []], [BF16] * 5)
    assert ln.flops == 5 * 16 * 512
    assert ln.bytes_accessed == (16 * 512 + 2 * 512 + 16 * 512) * 2
    assert category("aten::native_batch_norm") == "normalization"


def test_embedding_and_embedding_bag():
    e = cost("aten::embedding", [[1000, 64], [32, 10]], [F32, "long int"])
    assert e.flops == 0
    assert e.bytes_accessed == 320 * 64 * 4 * 2 + 320 * 8
    bag = cost("aten::embedding_bag", [[1000, 64], [320], [33]], [F32, "long int", "long int"])
    assert bag.flops == 320 * 64
    assert bag.bytes_written == 32 * 64 * 4


def test_foreach_optimizer_ops_sum_over_the_tensor_lists():
    lists = [[[10, 20], [30]], [[10, 20], [30]], []]
    c = cost("aten::_foreach_add_", lists, ["TensorList", "TensorList", "Scalar"])
    assert c.flops == 230
    assert c.bytes_accessed == (230 * 2 + 230) * 4


def test_trace_flops_win_and_missing_shapes_give_times_only():
    assert cost("aten::mm", [[2, 3], [3, 4]], [F32] * 2, flops=1234.0).flops == 1234.0
    none = cost("aten::mm", [], [])
    assert not none.known and "record_shapes" in none.note
    assert not cost("aten::mm", [[], []], ["TensorList", "Scalar"]).known
    assert not cost("record_param_comms", [], []).known
    assert category("record_param_comms") == "communication (NCCL)"
    assert category("fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function") == (
        "embedding"
    )


LSTM_ARGS = ["", "", "", "", "", "", "", "False", "[]", "2", "256", "2", "True", "False"]


def test_mkldnn_rnn_layer_is_the_gate_gemms_over_time_and_batch():
    # torch_lstm's first layer: T·B = 35·20, I = 128, H = 256, mode 2 (LSTM: 4 gates).
    dims = [[35, 20, 128], [1024, 128], [1024, 256], [1024], [1024], [20, 256], [20, 256]]
    c = cost("aten::mkldnn_rnn_layer", dims + [[]] * 7, [F32] * 7 + ["Scalar"] * 7, LSTM_ARGS)
    assert c.flops == 2 * 35 * 20 * 4 * 256 * (128 + 256)
    weights = 1024 * 128 + 1024 * 256 + 2 * 1024
    assert c.bytes_written == (35 * 20 * 256 + 2 * 20 * 256) * 4  # output, hy, cy
    assert c.bytes_accessed == (35 * 20 * 128 + weights + 2 * 20 * 256) * 4 + c.bytes_written
    # GRU (mode 3): 3 gates.
    gru = [[35, 20, 128], [768, 128], [768, 256], [768], [768], [20, 256], [20, 256]]
    concrete = [*LSTM_ARGS[:9], "3", *LSTM_ARGS[10:]]
    g = cost("aten::mkldnn_rnn_layer", gru + [[]] * 7, [F32] * 7 + ["Scalar"] * 7, concrete)
    assert g.flops == 2 * 35 * 20 * 3 * 256 * (128 + 256)


def test_mkldnn_rnn_layer_backward_is_twice_the_forward():
    dims = [[35, 20, 256], [1024, 256], [1024, 256], [1024], [1024], [20, 256], [20, 256]]
    dims += [[35, 20, 256], [20, 256], [20, 256], [35, 20, 256], [], [], [], [], [], []]
    types = [F32] * 11 + ["", ""] + ["Scalar"] * 4
    concrete = [""] * 13 + ["False", "2", "256", "2"]
    c = cost("aten::mkldnn_rnn_layer_backward", dims, types, concrete)
    assert c.flops == 2 * (2 * 35 * 20 * 4 * 256 * (256 + 256))


def test_lstm_counts_every_weight_gemm_of_every_layer():
    params = [[1024, 128], [1024, 256], [1024], [1024], [1024, 256], [1024, 256], [1024], [1024]]
    dims = [[20, 35, 128], [[2, 20, 256], [2, 20, 256]], params]
    c = cost("aten::lstm", dims, [F32, "TensorList", "TensorList"])
    rows = 20 * 35
    assert c.flops == 2 * rows * 1024 * (128 + 256) + 2 * rows * 1024 * (256 + 256)
    assert category("aten::lstm") == category("aten::mkldnn_rnn_layer") == "recurrent"


def test_causal_attention_counts_half_of_qk_and_pv():
    q = [16, 16, 559, 64]  # tl_h100_qwen's SDPA: (B, H, L, E), is_causal True
    full = 2 * 16 * 16 * 559 * 559 * (64 + 64)
    types = [BF16] * 3 + ["", "Scalar", "Scalar", "Scalar", "Scalar"]
    sdpa = cost(
        "aten::scaled_dot_product_attention",
        [q, q, q] + [[]] * 5,
        types,
        ["", "", "", "", "0.", "True", "0.125", "False"],
    )
    assert sdpa.flops == full / 2
    plain = cost(
        "aten::scaled_dot_product_attention",
        [q, q, q] + [[]] * 5,
        types,
        ["", "", "", "", "0.", "False", "0.125", "False"],
    )
    assert plain.flops == full
    flash = cost(
        "aten::_scaled_dot_product_flash_attention",
        [q, q, q] + [[]] * 4,
        [BF16] * 3 + ["Scalar"] * 4,
        ["", "", "", "0.", "True", "False", "0.125"],
    )
    assert flash.flops == full / 2
    blhe = [16, 559, 16, 64]
    fwd = cost(
        "aten::_flash_attention_forward",
        [blhe] * 3 + [[]] * 8,
        [BF16] * 3 + [""] * 8,
        ["", "", "", "", "", "559", "559", "0.", "True"],
    )
    assert fwd.flops == full / 2
    cpu = cost(
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        [q, q, q, [], []],
        [BF16] * 3 + ["Scalar"] * 2,
        ["", "", "", "0.", "True"],
    )
    assert (
        cpu.flops == full / 2
        and category("aten::_scaled_dot_product_flash_attention_for_cpu") == "attention"
    )
    # _efficient_attention_forward: custom_mask_type (position 9) 1 is causal.
    eff = cost(
        "aten::_efficient_attention_forward",
        [blhe] * 3 + [[]] * 7,
        [BF16] * 3 + [""] * 7,
        [""] * 9 + ["1"],
    )
    assert eff.flops == full / 2


def test_attention_backward_is_2_5x_its_forward_and_reads_grad_and_out():
    q = [2, 8, 128, 64]
    args = [""] * 7 + ["True"]  # _scaled_dot_product_flash_attention_for_cpu_backward: causal
    c = cost(
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
        [q] * 5 + [[2, 8, 128]],
        [F32] * 6,
        args,
    )
    assert c.flops == 2.5 * (2 * 2 * 8 * 128 * 128 * (64 + 64)) / 2
    size = 2 * 8 * 128 * 64 * 4
    assert c.bytes_written == 3 * size  # dq, dk, dv
    assert c.bytes_accessed == 3 * size + 2 * size + c.bytes_written  # q, k, v, grad_out, out


def test_convolution_backward_without_grad_input_skips_its_gemm_and_the_weight_read():
    dims = [[32, 16, 32, 32], [32, 3, 32, 32], [16, 3, 3, 3]] + [[]] * 8
    types = [F32] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"]
    concrete = ["", "", "", "[16]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    c = cost("aten::convolution_backward", dims, types, [*concrete, "[False, True, False]"])
    assert c.flops == 2 * 32 * 16 * 32 * 32 * 3 * 9  # grad_weight only
    assert c.bytes_written == 16 * 3 * 3 * 3 * 4
    assert c.bytes_accessed == (32 * 16 * 32 * 32 + 32 * 3 * 32 * 32) * 4 + c.bytes_written


def test_gathers_read_the_picked_rows_and_the_indices_not_the_source():
    # tl_h100_qwen's embedding lookup: 8944 of 151,936 rows of 1024 bf16.
    c = cost(
        "aten::index_select",
        [[151936, 1024], [], [8944]],
        [BF16, "Scalar", "long int"],
        ["", "0", ""],
    )
    rows = 8944 * 1024 * 2
    assert c.bytes_written == rows
    assert c.bytes_accessed == rows + 8944 * 8 + rows
    assert category("aten::index_select") == "gather"
    # index_select along dim 1 of [4, 100, 8]: 10 columns picked, 4·10·8 out.
    d = cost("aten::index_select", [[4, 100, 8], [], [10]], [F32, "Scalar", "int"], ["", "1", ""])
    assert d.bytes_accessed == 4 * 10 * 8 * 4 * 2 + 10 * 4
    g = cost("aten::gather", [[1000, 50], [], [1000, 1], []], [F32, "Scalar", "long int", "Scalar"])
    assert g.bytes_accessed == 1000 * 4 * 2 + 1000 * 8
    t = cost("aten::take_along_dim", [[1000, 50], [1000, 3], []], [F32, "long int", "Scalar"])
    assert t.bytes_accessed == 3000 * 4 * 2 + 3000 * 8
    i = cost("aten::index", [[1000, 64], [[256]]], [BF16, "TensorList"])
    assert i.bytes_accessed == 256 * 64 * 2 * 2 + 256 * 8
    e = cost(
        "aten::embedding",
        [[151936, 1024], [16, 559], [], [], []],
        [BF16, "long int"] + ["Scalar"] * 3,
    )
    assert e.bytes_accessed == 2 * 8944 * 1024 * 2 + 8944 * 8


def test_embedding_dense_backward_adds_the_gradient_rows_into_the_table():
    c = cost(
        "aten::embedding_dense_backward",
        [[20, 35, 128], [20, 35], [], [], []],
        [F32, "long int", "Scalar", "Scalar", "Scalar"],
        ["", "", "2000", "-1", "False"],
    )
    assert c.flops == 20 * 35 * 128
    assert c.bytes_written == 2000 * 128 * 4
    assert c.bytes_accessed == 20 * 35 * 128 * 4 + 20 * 35 * 8 + 2000 * 128 * 4


def test_dtype_names_are_matched_without_case():
    for name, dtype, size in [("c10::bfloat16", "bf16", 2), ("c10::Half", "fp16", 2),
                              ("C10::HALF", "fp16", 2), ("Float", "fp32", 4),
                              ("double", "fp64", 8), ("c10::float8_e4m3fn", "fp8", 1)]:  # fmt: skip
        c = cost("aten::relu", [[10, 10]], [name])
        assert (c.dtype, c.bytes_written) == (dtype, 100 * size), name
    indices = cost("aten::relu", [[10, 10]], ["long int"])
    assert indices.bytes_written == 800 and indices.dtype == ""
    assert cost("aten::relu", [[10, 10]], ["unsigned char"]).bytes_written == 100


def test_out_tensors_are_written_not_read():
    # mul(a, b, out=c): the third tensor is the output.
    c = cost("aten::mul", [[64, 64], [64, 64], [64, 64]], [F32] * 3)
    assert c.bytes_accessed == 3 * 64 * 64 * 4 and c.bytes_written == 64 * 64 * 4
    # add(self, other, alpha, out=...).
    a = cost("aten::add", [[8, 8], [8, 8], [], [8, 8]], [F32, F32, "Scalar", F32])
    assert a.bytes_accessed == 3 * 64 * 4
    named_out = cost("aten::exp.out", [[8, 8], [8, 8]], [F32, F32])
    assert named_out.bytes_accessed == 2 * 64 * 4


# PyTorch 1.9's schemas: no Concrete Inputs, int lists recorded as empty "GenericList"s.
OLD_CONV_TYPES = [F32, F32, "GenericList", "GenericList", "GenericList", "Int", "Bool"]
STRIDED = ConvShapes(
    frozenset({((32, 3, 224, 224), (64, 3, 7, 7), (32, 64, 112, 112))})  # stride 2, padding 3
)


def old(name, dims, conv=None):
    types = OLD_CONV_TYPES if name.endswith("convolution") else ["GenericList", *OLD_CONV_TYPES]
    return op_cost(name, OpArgs(list(dims), types, [], conv))


def test_an_old_forward_convolution_takes_its_output_from_the_backward_pass():
    dims = [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], []]
    c = old("aten::cudnn_convolution", dims, STRIDED)
    # 2 · N · K · P · Q · C · R · S with the 112 x 112 output the backward op records.
    assert c.flops == 2 * 32 * 64 * 112 * 112 * 3 * 7 * 7
    assert c.bytes_written == 32 * 64 * 112 * 112 * 4
    # Without it the stride is not known: no FLOPs rather than a stride-1 guess (4x too many).
    unknown = old("aten::cudnn_convolution", dims)
    assert not unknown.known and unknown.flops == 0 and "stride" in unknown.note


def test_a_strided_pointwise_convolution_needs_the_backward_pass_too():
    # ResNet's downsampling 1x1 convolutions have stride 2: 56 x 56 in, 28 x 28 out.
    dims = [[32, 256, 56, 56], [512, 256, 1, 1], [], [], [], [], []]
    assert not old("aten::cudnn_convolution", dims).known
    shapes = ConvShapes(frozenset({((32, 256, 56, 56), (512, 256, 1, 1), (32, 512, 28, 28))}))
    assert old("aten::cudnn_convolution", dims, shapes).flops == 2 * 32 * 512 * 28 * 28 * 256


def test_old_backward_halves_cost_a_forward_each():
    grad_out, weight, inp = [32, 64, 112, 112], [64, 3, 7, 7], [32, 3, 224, 224]
    forward = 2 * 32 * 64 * 112 * 112 * 3 * 7 * 7
    grad_input = old("aten::cudnn_convolution_backward_input", [[], grad_out, weight], STRIDED)
    assert grad_input.flops == forward
    assert grad_input.bytes_written == 32 * 3 * 224 * 224 * 4  # the input's size, found
    read = 32 * 64 * 112 * 112 + 64 * 3 * 7 * 7  # grad_output and weight
    assert grad_input.bytes_accessed == read * 4 + grad_input.bytes_written
    grad_weight = old("aten::cudnn_convolution_backward_weight", [[], grad_out, inp], STRIDED)
    assert grad_weight.flops == forward and grad_weight.bytes_written == 64 * 3 * 7 * 7 * 4
    # The weight's size is only in the trace's full backward op.
    assert not old("aten::cudnn_convolution_backward_weight", [[], grad_out, inp]).known


def test_conv_shapes_come_from_the_old_self_first_backward_and_stay_unknown_when_ambiguous():
    types = [F32, F32, F32]
    full = OpArgs([[32, 64, 56, 56], [32, 64, 56, 56], [64, 64, 3, 3]], types, [])
    pointwise = OpArgs([[32, 64, 56, 56], [32, 64, 56, 56], [64, 64, 1, 1]], types, [])
    strided = OpArgs([[32, 3, 224, 224], [32, 64, 112, 112], [64, 3, 7, 7]], types, [])
    shapes = conv_shapes(
        [
            ("aten::cudnn_convolution_backward", full),
            ("aten::cudnn_convolution_backward", pointwise),
            ("aten::cudnn_convolution_backward", strided),
        ]
    )
    assert shapes.output((32, 3, 224, 224), (64, 3, 7, 7)) == (32, 64, 112, 112)
    assert shapes.weight((32, 64, 112, 112), (32, 3, 224, 224)) == (64, 3, 7, 7)
    # Same input and output, two weights (3x3 padded, 1x1): which one is not known.
    assert shapes.weight((32, 64, 56, 56), (32, 64, 56, 56)) is None
    # The old full backward takes (self, grad_output, weight): grad_input then grad_weight.
    c = op_cost("aten::cudnn_convolution_backward", strided, 0.0)
    assert c.flops == 2 * (2 * 32 * 64 * 112 * 112 * 3 * 7 * 7) + 32 * 64 * 112 * 112
