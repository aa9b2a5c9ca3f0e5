"""What a cost is: ``InstructionCost``, the public figures of one instruction, and
``CostSum``, the running sum the rules build (one instruction, or a whole computation)."""

from __future__ import annotations

from dataclasses import dataclass, field

# --- public data ---------------------------------------------------------------------


@dataclass(frozen=True)
class InstructionCost:
    """Cost of one execution of one HLO instruction (XLA's HloCostAnalysis properties).

    ``bytes_written`` is the output part of ``bytes_accessed`` so that callers can split
    HBM traffic into READ (``bytes_accessed - bytes_written``) and WRITE.
    """

    flops: (
        float  # FLOPs, transcendentals excluded (XLA generic rules; 1 per element for elementwise)
    )
    transcendentals: float  # transcendental operations (exp, log, tanh, ...)
    bytes_accessed: float  # bytes read + written under XLA's "bytes accessed" rules
    bytes_written: float  # bytes of the output part of bytes_accessed
    dtype: str  # dominant input dtype, ``roofline_dtype`` name ("bf16", "fp32", "s32"); "" if none
    unknown: bool = False  # cost unknown (unrecognised custom call): flops 0, default bytes
    note: str = ""  # short provenance, e.g. "cuBLAS GEMM from backend_config"

    @property
    def bytes_read(self) -> float:
        """Bytes read (accessed minus written), never negative."""
        return max(self.bytes_accessed - self.bytes_written, 0.0)


# --- the analysis --------------------------------------------------------------------


@dataclass
class CostSum:
    """Mutable sum of costs (a computation's total, or one instruction being built)."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0
    bytes_written: float = 0.0
    unknown_targets: set[str] = field(default_factory=set)

    def add(self, other: CostSum, times: float = 1.0, with_bytes: bool = True) -> None:
        self.flops += other.flops * times
        self.transcendentals += other.transcendentals * times
        if with_bytes:
            self.bytes_accessed += other.bytes_accessed * times
            self.bytes_written += other.bytes_written * times
        self.unknown_targets |= other.unknown_targets
