"""What a generated PyTorch profiler (Kineto) trace holds: the model and run (``KinetoSpec``),
the devices it can run on with their peaks, each kernel family's efficiency, and the process,
thread and stream ids the events carry.
"""

from __future__ import annotations

from dataclasses import dataclass

BF16 = "c10::BFloat16"
PID = 2_147_001  # the training process
MAIN, AUTOGRAD = 2_147_001, 2_147_113  # its main and autograd threads
COMPUTE, NCCL = 7, 20  # the device's streams
START_US = 1_000_000  # first event, µs after baseTimeNanoseconds


def _properties(name: str, memory_bytes: int, major: int, sms: int) -> dict:
    """A CUDA device's ``deviceProperties`` entry, keys in Kineto's order."""
    return {
        "name": name,
        "totalGlobalMem": memory_bytes,
        "computeMajor": major,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "numSms": sms,
    }


# name: (deviceProperties, bf16 FLOP/s, HBM bytes/s)
DEVICES = {
    "h100": (_properties("NVIDIA H100 80GB HBM3", 85045870592, 9, 132), 989.4e12, 3.35e12),
    "a100": (_properties("NVIDIA A100-SXM4-80GB", 85097971712, 8, 108), 312e12, 2.039e12),
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
