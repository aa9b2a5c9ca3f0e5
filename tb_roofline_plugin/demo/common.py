"""What the TPU, GPU and CPU generators share: time units, the fixed profile start,
seeded jitter (``Uniform``), host filler lines, the HLO module builders (``Sources``,
``Computation``, ``array_shape``, ``tuple_shape``) and sizing a profile to ``target_bytes``.
"""

from __future__ import annotations

import numpy as np

from ..protos import hlo_pb2, xplane_pb2
from . import xspace_builder

NS = 1_000  # ps per ns
US = 1_000_000  # ps per µs
PROFILE_START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z, fixed: no wall clock


class Uniform:
    """Floats in [0, 1) from a numpy generator, drawn in fixed-size blocks for speed."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._block: list[float] = []
        self._next = 0

    def __call__(self, low: float = 0.0, high: float = 1.0) -> float:
        if self._next == len(self._block):
            self._block = self._rng.random(4096).tolist()
            self._next = 0
        value = self._block[self._next]
        self._next += 1
        return low + (high - low) * value


def filler_line(
    plane: xspace_builder.PlaneBuilder,
    line: xplane_pb2.XLine,
    names: tuple[str, ...],
    rng: np.random.Generator,
    count: int,
    span_ps: int,
) -> None:
    """`count` host events named from `names` at random times in [0, span_ps) on `line`.

    Each event ends before the next begins; every event has a `_src` ref, every eighth a
    `long_name`. Readers that only need steps and launches must skip these.
    """
    long_name, source = plane.stat_id("long_name"), plane.stat_id("_src")
    metas = [plane.event_metadata(name) for name in names]
    refs = [plane.stat_id(f"{src}.py:{100 + 11 * k}") for k, src in enumerate(("jax", "xla"))]
    begins = np.sort(rng.integers(0, span_ps, count))
    gaps = np.diff(np.append(begins, span_ps))
    durations = (gaps * rng.uniform(0.1, 0.9, count)).astype(np.int64)
    which = rng.integers(0, len(names), count)
    add = line.events.add
    rows = zip(begins.tolist(), durations.tolist(), which.tolist())
    for k, (begin, duration, w) in enumerate(rows):
        event = add(metadata_id=metas[w], offset_ps=begin, duration_ps=duration)
        event.stats.add(metadata_id=source, ref_value=refs[k % 2])
        if k % 8 == 0:
            event.stats.add(metadata_id=long_name, str_value=f"{names[w]} #{k}#")


PT = hlo_pb2.PrimitiveType
BF16, F32, S8, TUPLE = (PT.Value(name) for name in ("BF16", "F32", "S8", "TUPLE"))


def array_shape(
    dtype: hlo_pb2.PrimitiveType,
    *dims: int,
    minor_to_major: tuple[int, ...] | None = None,
):
    """An array shape with a layout (without one, XLA's cost analysis sizes it 0 bytes)."""
    shape = hlo_pb2.ShapeProto(element_type=dtype, dimensions=dims)
    shape.layout.SetInParent()
    order = minor_to_major if minor_to_major is not None else range(len(dims) - 1, -1, -1)
    shape.layout.minor_to_major.extend(order)
    return shape


def tuple_shape(*shapes: hlo_pb2.ShapeProto) -> hlo_pb2.ShapeProto:
    return hlo_pb2.ShapeProto(element_type=TUPLE, tuple_shapes=shapes)


class Sources:
    """A module's `stack_frame_index` (1-based ids) and the OpMetadata pointing into it."""

    def __init__(self, module: hlo_pb2.HloModuleProto, function: str, caller_line: int):
        self._index = module.stack_frame_index
        self._ids: dict[tuple[str, str], int] = {}
        self._function = function
        outer = self._frame("train.py", "<module>", 212, 4, 0)
        self._caller = self._frame("train.py", "main", caller_line, 18, outer)

    def _id(self, kind: str, value: str, values) -> int:
        key = (kind, value)
        if key not in self._ids:
            values.append(value)
            self._ids[key] = len(values)
        return self._ids[key]

    def _frame(self, file: str, function: str, line: int, column: int, parent: int) -> int:
        index = self._index
        index.file_locations.add(
            file_name_id=self._id("file", file, index.file_names),
            function_name_id=self._id("function", function, index.function_names),
            line=line,
            column=column,
        )
        index.stack_frames.add(file_location_id=len(index.file_locations), parent_frame_id=parent)
        return len(index.stack_frames)

    def __call__(self, primitive: str, function: str, line: int) -> hlo_pb2.OpMetadata:
        """Metadata of an op written at model.py:`line` in `function`, called from main."""
        return hlo_pb2.OpMetadata(
            op_name=f"jit({self._function})/jit(main)/{primitive}",
            source_file="model.py",
            source_line=line,
            stack_frame_id=self._frame("model.py", function, line, 12, self._caller),
        )


class Computation:
    """An HLO computation being written; instruction ids are (computation id << 32) | n."""

    def __init__(self, module: hlo_pb2.HloModuleProto, name: str, fusion: bool = False):
        comp_id = len(module.computations) + 1
        self.proto = module.computations.add(name=name, id=comp_id, is_fusion_computation=fusion)
        self.parameters: list[hlo_pb2.HloInstructionProto] = []

    def add(self, name: str, opcode: str, shape, *operands, calls=(), dims=(), **fields):
        """Appends an instruction; ``fields`` are HloInstructionProto fields, and
        ``contracting=(lhs, rhs)`` sets the dot dimension numbers."""
        instr = self.proto.instructions.add(
            name=name, opcode=opcode, id=(self.proto.id << 32) | len(self.proto.instructions)
        )
        instr.shape.CopyFrom(shape)
        instr.operand_ids.extend(op.id for op in operands)
        instr.called_computation_ids.extend(c.proto.id for c in calls)
        instr.dimensions.extend(dims)
        contracting = fields.pop("contracting", None)
        if contracting is not None:
            instr.dot_dimension_numbers.lhs_contracting_dimensions.append(contracting[0])
            instr.dot_dimension_numbers.rhs_contracting_dimensions.append(contracting[1])
        metadata = fields.pop("metadata", None)
        if metadata is not None:
            instr.metadata.CopyFrom(metadata)
        for key, value in fields.items():
            setattr(instr, key, value)
        return instr

    def parameter(self, name: str, shape):
        param = self.add(name, "parameter", shape, parameter_number=len(self.parameters))
        param.metadata.op_name = name.split(".")[0]
        self.parameters.append(param)
        return param

    def finish(self, root) -> Computation:
        self.proto.root_id = root.id
        program = self.proto.program_shape
        for param in self.parameters:
            program.parameters.add().CopyFrom(param.shape)
            program.parameter_names.append(param.name)
        program.result.CopyFrom(root.shape)
        return self


def repeats_for_size(build, target_bytes: int, origin_ps: int) -> int:
    """Repeats that make ``build(repeats, origin)``'s profile about ``target_bytes``.

    Two small builds give the size per repeat; offsets (and their varints) grow with the
    profile, so the estimate is taken again with the origin near the big profile's middle.
    """
    small, large = 4, 8
    probe, end = build(small)
    size_small = probe.ByteSize()
    per_repeat = (build(large)[0].ByteSize() - size_small) / (large - small)
    repeats = max(1, round(small + (target_bytes - size_small) / per_repeat))
    origin = origin_ps + (end - origin_ps) * repeats // (2 * small)
    size_small = build(small, origin)[0].ByteSize()
    per_repeat = (build(large, origin)[0].ByteSize() - size_small) / (large - small)
    return max(1, round(small + (target_bytes - size_small) / per_repeat))


def steps_or_runs(spec, build, inference_runs: int, origin_ps: int) -> int:
    """Steps (or runs) of a GPU or CPU ``spec`` that make the serialized profile about
    ``spec.target_bytes`` (``build(spec, n, origin)`` makes one of ``n``)."""
    if spec.target_bytes <= 0:
        return spec.steps if spec.steps > 0 else inference_runs
    return repeats_for_size(
        lambda n, *origin: build(spec, n, *origin), spec.target_bytes, origin_ps
    )
