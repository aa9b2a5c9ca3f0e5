"""Small JAX programs recorded on CPU for the tests: each a jitted step run inside step markers."""

from __future__ import annotations

import glob
import os
from pathlib import Path


def _programs():
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)

    def matmul_chain(x, w):
        for _ in range(3):
            x = jnp.tanh(x @ w)
        return x

    def mlp_loss(params, x, y):
        h = jax.nn.gelu(x @ params["w1"])
        logits = h @ params["w2"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def mlp_step(params, x, y):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
        return loss, jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)

    def attention(q, k, v):
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(q.shape[-1])
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)

    def convolution(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME")

    def layer_norm(x, gamma, beta):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.var(x, axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5) * gamma + beta

    params = {
        "w1": jax.random.normal(k1, (256, 512)),
        "w2": jax.random.normal(k2, (512, 10)),
    }
    return {
        "matmul_chain": (matmul_chain, (jnp.ones((256, 256)), jnp.ones((256, 256)) / 256)),
        "mlp_step": (mlp_step, (params, jnp.ones((64, 256)), jnp.ones((64, 10)) / 10)),
        "attention": (attention, tuple(jax.random.normal(k3, (2, 4, 64, 32)) for _ in range(3))),
        "convolution": (convolution, (jnp.ones((4, 16, 32, 32)), jnp.ones((32, 16, 3, 3)) / 9)),
        "layer_norm": (layer_norm, (jnp.ones((128, 512)), jnp.ones(512), jnp.zeros(512))),
    }


def record(logdir: str | os.PathLike, name: str, steps: int = 3) -> tuple[Path, dict, str]:
    """Records ``steps`` steps of program ``name``; returns (xplane path, XLA cost, module name)."""
    import jax

    function, args = _programs()[name]
    jitted = jax.jit(function)
    compiled = jitted.lower(*args).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    jax.block_until_ready(jitted(*args))  # compile and warm up outside the trace
    with jax.profiler.trace(str(logdir)):
        for step in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                jax.block_until_ready(jitted(*args))
    (path,) = glob.glob(os.path.join(str(logdir), "plugins", "profile", "*", "*.xplane.pb"))
    return Path(path), dict(cost), f"jit_{function.__name__}"


PROGRAMS = ("matmul_chain", "mlp_step", "attention", "convolution", "layer_norm")


def record_while_loop(
    logdir: str | os.PathLike, trips: list[int], size: int = 128
) -> tuple[Path, str]:
    """Records one step per entry of ``trips`` of a ``lax.while_loop`` that runs
    ``y = tanh(y @ w)`` (size x size) while its counter is below an argument: the trip
    count is data, so XLA writes no ``known_trip_count``. Returns (xplane path, module name)."""
    import jax
    import jax.numpy as jnp

    def data_while(x, w, n):
        def body(carry):
            i, y = carry
            return i + 1, jnp.tanh(y @ w)

        return jax.lax.while_loop(lambda carry: carry[0] < n, body, (jnp.int32(0), x))[1]

    args = (jnp.ones((size, size)), jnp.ones((size, size)) / size)
    jitted = jax.jit(data_while)
    jax.block_until_ready(jitted(*args, jnp.int32(1)))  # compile and warm up outside the trace
    with jax.profiler.trace(str(logdir)):
        for step, n in enumerate(trips):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                jax.block_until_ready(jitted(*args, jnp.int32(n)))
    (path,) = glob.glob(os.path.join(str(logdir), "plugins", "profile", "*", "*.xplane.pb"))
    return Path(path), "jit_data_while"


# Two MLP blocks of different widths and an embedding, each in its jax.named_scope: batch,
# vocabulary, model width, block A's hidden and output width, block B's hidden width.
LAYERED = {
    "batch": 64,
    "vocab": 1000,
    "width": 128,
    "a_hidden": 512,
    "a_out": 256,
    "b_hidden": 1024,
}


def _layered():
    import jax
    import jax.numpy as jnp

    s = LAYERED

    def block(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    def embed(table, tokens):
        return table[tokens]

    def forward(p, tokens):
        with jax.named_scope("embedding"):
            h = embed(p["emb"], tokens)
        with jax.named_scope("mlp_a"):
            h = block(h, p["a1"], p["a2"])
        with jax.named_scope("mlp_b"):
            h = block(h, p["b1"], p["b2"])
        return h

    def loss(p, tokens, target):
        return jnp.mean((forward(p, tokens) - target) ** 2)

    def train(p, tokens, target):
        value, grads = jax.value_and_grad(loss)(p, tokens, target)
        return value, jax.tree_util.tree_map(lambda w, g: w - 1e-3 * g, p, grads)

    keys = jax.random.split(jax.random.PRNGKey(0), 5)
    shapes = {
        "emb": (s["vocab"], s["width"]),
        "a1": (s["width"], s["a_hidden"]),
        "a2": (s["a_hidden"], s["a_out"]),
        "b1": (s["a_out"], s["b_hidden"]),
        "b2": (s["b_hidden"], s["width"]),
    }
    params = {k: jax.random.normal(key, shape) for key, (k, shape) in zip(keys, shapes.items())}
    tokens = jnp.arange(s["batch"]) % s["vocab"]
    target = jnp.ones((s["batch"], s["width"]))
    blocks = {  # each scope's function alone, on the inputs it gets in the program
        "embedding": (embed, (params["emb"], tokens)),
        "mlp_a": (block, (jnp.ones((s["batch"], s["width"])), params["a1"], params["a2"])),
        "mlp_b": (block, (jnp.ones((s["batch"], s["a_out"])), params["b1"], params["b2"])),
    }
    return {
        "forward": (forward, (params, tokens)),
        "train": (train, (params, tokens, target)),
    }, blocks


def _flops(function, args) -> float:
    import jax

    cost = jax.jit(function).lower(*args).compile().cost_analysis()
    return float((cost[0] if isinstance(cost, list) else cost)["flops"])


def record_layered(logdir: str | os.PathLike, name: str, steps: int = 3) -> tuple[Path, dict]:
    """Records ``steps`` steps of the layered program ``name`` ("forward" or "train");
    returns the xplane path and XLA's FLOPs (``cost_analysis``) of the whole program and of
    each scope's function compiled alone (keys "program", "embedding", "mlp_a", "mlp_b")."""
    import jax

    programs, blocks = _layered()
    function, args = programs[name]
    costs = {scope: _flops(f, a) for scope, (f, a) in blocks.items()}
    costs["program"] = _flops(function, args)
    jitted = jax.jit(function)
    jax.block_until_ready(jitted(*args))
    with jax.profiler.trace(str(logdir)):
        for step in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                jax.block_until_ready(jitted(*args))
    (path,) = glob.glob(os.path.join(str(logdir), "plugins", "profile", "*", "*.xplane.pb"))
    return Path(path), costs
