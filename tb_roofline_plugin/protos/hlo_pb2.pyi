# Post-processed by tb_roofline_plugin.protos.generate (relative imports, private pool).
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PrimitiveType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIMITIVE_TYPE_INVALID: _ClassVar[PrimitiveType]
    PRED: _ClassVar[PrimitiveType]
    S8: _ClassVar[PrimitiveType]
    S16: _ClassVar[PrimitiveType]
    S32: _ClassVar[PrimitiveType]
    S64: _ClassVar[PrimitiveType]
    U8: _ClassVar[PrimitiveType]
    U16: _ClassVar[PrimitiveType]
    U32: _ClassVar[PrimitiveType]
    U64: _ClassVar[PrimitiveType]
    F16: _ClassVar[PrimitiveType]
    F32: _ClassVar[PrimitiveType]
    F64: _ClassVar[PrimitiveType]
    TUPLE: _ClassVar[PrimitiveType]
    OPAQUE_TYPE: _ClassVar[PrimitiveType]
    C64: _ClassVar[PrimitiveType]
    BF16: _ClassVar[PrimitiveType]
    TOKEN: _ClassVar[PrimitiveType]
    C128: _ClassVar[PrimitiveType]
    F8E5M2: _ClassVar[PrimitiveType]
    F8E4M3FN: _ClassVar[PrimitiveType]
    S4: _ClassVar[PrimitiveType]
    U4: _ClassVar[PrimitiveType]
    F8E4M3B11FNUZ: _ClassVar[PrimitiveType]
    F8E5M2FNUZ: _ClassVar[PrimitiveType]
    F8E4M3FNUZ: _ClassVar[PrimitiveType]
    S2: _ClassVar[PrimitiveType]
    U2: _ClassVar[PrimitiveType]
    F8E4M3: _ClassVar[PrimitiveType]
    F8E3M4: _ClassVar[PrimitiveType]
    S1: _ClassVar[PrimitiveType]
    U1: _ClassVar[PrimitiveType]
    F4E2M1FN: _ClassVar[PrimitiveType]
    F8E8M0FNU: _ClassVar[PrimitiveType]
    BUFFER: _ClassVar[PrimitiveType]
PRIMITIVE_TYPE_INVALID: PrimitiveType
PRED: PrimitiveType
S8: PrimitiveType
S16: PrimitiveType
S32: PrimitiveType
S64: PrimitiveType
U8: PrimitiveType
U16: PrimitiveType
U32: PrimitiveType
U64: PrimitiveType
F16: PrimitiveType
F32: PrimitiveType
F64: PrimitiveType
TUPLE: PrimitiveType
OPAQUE_TYPE: PrimitiveType
C64: PrimitiveType
BF16: PrimitiveType
TOKEN: PrimitiveType
C128: PrimitiveType
F8E5M2: PrimitiveType
F8E4M3FN: PrimitiveType
S4: PrimitiveType
U4: PrimitiveType
F8E4M3B11FNUZ: PrimitiveType
F8E5M2FNUZ: PrimitiveType
F8E4M3FNUZ: PrimitiveType
S2: PrimitiveType
U2: PrimitiveType
F8E4M3: PrimitiveType
F8E3M4: PrimitiveType
S1: PrimitiveType
U1: PrimitiveType
F4E2M1FN: PrimitiveType
F8E8M0FNU: PrimitiveType
BUFFER: PrimitiveType

class TileProto(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class LayoutProto(_message.Message):
    __slots__ = ("minor_to_major", "tiles", "element_size_in_bits", "memory_space")
    MINOR_TO_MAJOR_FIELD_NUMBER: _ClassVar[int]
    TILES_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_SIZE_IN_BITS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SPACE_FIELD_NUMBER: _ClassVar[int]
    minor_to_major: _containers.RepeatedScalarFieldContainer[int]
    tiles: _containers.RepeatedCompositeFieldContainer[TileProto]
    element_size_in_bits: int
    memory_space: int
    def __init__(self, minor_to_major: _Optional[_Iterable[int]] = ..., tiles: _Optional[_Iterable[_Union[TileProto, _Mapping]]] = ..., element_size_in_bits: _Optional[int] = ..., memory_space: _Optional[int] = ...) -> None: ...

class ShapeProto(_message.Message):
    __slots__ = ("element_type", "dimensions", "tuple_shapes", "layout", "is_dynamic_dimension")
    ELEMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    TUPLE_SHAPES_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    IS_DYNAMIC_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    element_type: PrimitiveType
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    tuple_shapes: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    layout: LayoutProto
    is_dynamic_dimension: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, element_type: _Optional[_Union[PrimitiveType, str]] = ..., dimensions: _Optional[_Iterable[int]] = ..., tuple_shapes: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., layout: _Optional[_Union[LayoutProto, _Mapping]] = ..., is_dynamic_dimension: _Optional[_Iterable[bool]] = ...) -> None: ...

class ProgramShapeProto(_message.Message):
    __slots__ = ("parameters", "result", "parameter_names")
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NAMES_FIELD_NUMBER: _ClassVar[int]
    parameters: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    result: ShapeProto
    parameter_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, parameters: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., result: _Optional[_Union[ShapeProto, _Mapping]] = ..., parameter_names: _Optional[_Iterable[str]] = ...) -> None: ...

class OpMetadata(_message.Message):
    __slots__ = ("op_type", "op_name", "source_file", "source_line", "size_of_generated_code_in_bytes", "deduplicated_name", "stack_frame_id", "scheduling_name", "source_end_line", "source_column")
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LINE_FIELD_NUMBER: _ClassVar[int]
    SIZE_OF_GENERATED_CODE_IN_BYTES_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_NAME_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_END_LINE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_COLUMN_FIELD_NUMBER: _ClassVar[int]
    op_type: str
    op_name: str
    source_file: str
    source_line: int
    size_of_generated_code_in_bytes: int
    deduplicated_name: str
    stack_frame_id: int
    scheduling_name: str
    source_end_line: int
    source_column: int
    def __init__(self, op_type: _Optional[str] = ..., op_name: _Optional[str] = ..., source_file: _Optional[str] = ..., source_line: _Optional[int] = ..., size_of_generated_code_in_bytes: _Optional[int] = ..., deduplicated_name: _Optional[str] = ..., stack_frame_id: _Optional[int] = ..., scheduling_name: _Optional[str] = ..., source_end_line: _Optional[int] = ..., source_column: _Optional[int] = ...) -> None: ...

class WindowDimension(_message.Message):
    __slots__ = ("size", "stride", "padding_low", "padding_high", "window_dilation", "base_dilation", "window_reversal")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STRIDE_FIELD_NUMBER: _ClassVar[int]
    PADDING_LOW_FIELD_NUMBER: _ClassVar[int]
    PADDING_HIGH_FIELD_NUMBER: _ClassVar[int]
    WINDOW_DILATION_FIELD_NUMBER: _ClassVar[int]
    BASE_DILATION_FIELD_NUMBER: _ClassVar[int]
    WINDOW_REVERSAL_FIELD_NUMBER: _ClassVar[int]
    size: int
    stride: int
    padding_low: int
    padding_high: int
    window_dilation: int
    base_dilation: int
    window_reversal: bool
    def __init__(self, size: _Optional[int] = ..., stride: _Optional[int] = ..., padding_low: _Optional[int] = ..., padding_high: _Optional[int] = ..., window_dilation: _Optional[int] = ..., base_dilation: _Optional[int] = ..., window_reversal: bool = ...) -> None: ...

class Window(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[WindowDimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[WindowDimension, _Mapping]]] = ...) -> None: ...

class ConvolutionDimensionNumbers(_message.Message):
    __slots__ = ("kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "input_batch_dimension", "input_feature_dimension", "output_batch_dimension", "output_feature_dimension", "input_spatial_dimensions", "output_spatial_dimensions")
    KERNEL_INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    INPUT_BATCH_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BATCH_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    input_batch_dimension: int
    input_feature_dimension: int
    output_batch_dimension: int
    output_feature_dimension: int
    input_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    output_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, kernel_input_feature_dimension: _Optional[int] = ..., kernel_output_feature_dimension: _Optional[int] = ..., kernel_spatial_dimensions: _Optional[_Iterable[int]] = ..., input_batch_dimension: _Optional[int] = ..., input_feature_dimension: _Optional[int] = ..., output_batch_dimension: _Optional[int] = ..., output_feature_dimension: _Optional[int] = ..., input_spatial_dimensions: _Optional[_Iterable[int]] = ..., output_spatial_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class DotDimensionNumbers(_message.Message):
    __slots__ = ("lhs_contracting_dimensions", "rhs_contracting_dimensions", "lhs_batch_dimensions", "rhs_batch_dimensions")
    LHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    LHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    lhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    lhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, lhs_contracting_dimensions: _Optional[_Iterable[int]] = ..., rhs_contracting_dimensions: _Optional[_Iterable[int]] = ..., lhs_batch_dimensions: _Optional[_Iterable[int]] = ..., rhs_batch_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class GatherDimensionNumbers(_message.Message):
    __slots__ = ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim", "operand_batching_dims", "start_indices_batching_dims")
    OFFSET_DIMS_FIELD_NUMBER: _ClassVar[int]
    COLLAPSED_SLICE_DIMS_FIELD_NUMBER: _ClassVar[int]
    START_INDEX_MAP_FIELD_NUMBER: _ClassVar[int]
    INDEX_VECTOR_DIM_FIELD_NUMBER: _ClassVar[int]
    OPERAND_BATCHING_DIMS_FIELD_NUMBER: _ClassVar[int]
    START_INDICES_BATCHING_DIMS_FIELD_NUMBER: _ClassVar[int]
    offset_dims: _containers.RepeatedScalarFieldContainer[int]
    collapsed_slice_dims: _containers.RepeatedScalarFieldContainer[int]
    start_index_map: _containers.RepeatedScalarFieldContainer[int]
    index_vector_dim: int
    operand_batching_dims: _containers.RepeatedScalarFieldContainer[int]
    start_indices_batching_dims: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, offset_dims: _Optional[_Iterable[int]] = ..., collapsed_slice_dims: _Optional[_Iterable[int]] = ..., start_index_map: _Optional[_Iterable[int]] = ..., index_vector_dim: _Optional[int] = ..., operand_batching_dims: _Optional[_Iterable[int]] = ..., start_indices_batching_dims: _Optional[_Iterable[int]] = ...) -> None: ...

class ScatterDimensionNumbers(_message.Message):
    __slots__ = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "index_vector_dim", "input_batching_dims", "scatter_indices_batching_dims")
    UPDATE_WINDOW_DIMS_FIELD_NUMBER: _ClassVar[int]
    INSERTED_WINDOW_DIMS_FIELD_NUMBER: _ClassVar[int]
    SCATTER_DIMS_TO_OPERAND_DIMS_FIELD_NUMBER: _ClassVar[int]
    INDEX_VECTOR_DIM_FIELD_NUMBER: _ClassVar[int]
    INPUT_BATCHING_DIMS_FIELD_NUMBER: _ClassVar[int]
    SCATTER_INDICES_BATCHING_DIMS_FIELD_NUMBER: _ClassVar[int]
    update_window_dims: _containers.RepeatedScalarFieldContainer[int]
    inserted_window_dims: _containers.RepeatedScalarFieldContainer[int]
    scatter_dims_to_operand_dims: _containers.RepeatedScalarFieldContainer[int]
    index_vector_dim: int
    input_batching_dims: _containers.RepeatedScalarFieldContainer[int]
    scatter_indices_batching_dims: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, update_window_dims: _Optional[_Iterable[int]] = ..., inserted_window_dims: _Optional[_Iterable[int]] = ..., scatter_dims_to_operand_dims: _Optional[_Iterable[int]] = ..., index_vector_dim: _Optional[int] = ..., input_batching_dims: _Optional[_Iterable[int]] = ..., scatter_indices_batching_dims: _Optional[_Iterable[int]] = ...) -> None: ...

class PaddingConfig(_message.Message):
    __slots__ = ("dimensions",)
    class PaddingConfigDimension(_message.Message):
        __slots__ = ("edge_padding_low", "edge_padding_high", "interior_padding")
        EDGE_PADDING_LOW_FIELD_NUMBER: _ClassVar[int]
        EDGE_PADDING_HIGH_FIELD_NUMBER: _ClassVar[int]
        INTERIOR_PADDING_FIELD_NUMBER: _ClassVar[int]
        edge_padding_low: int
        edge_padding_high: int
        interior_padding: int
        def __init__(self, edge_padding_low: _Optional[int] = ..., edge_padding_high: _Optional[int] = ..., interior_padding: _Optional[int] = ...) -> None: ...
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[PaddingConfig.PaddingConfigDimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[PaddingConfig.PaddingConfigDimension, _Mapping]]] = ...) -> None: ...

class StackFrameIndexProto(_message.Message):
    __slots__ = ("file_names", "function_names", "file_locations", "stack_frames")
    class FileLocation(_message.Message):
        __slots__ = ("file_name_id", "function_name_id", "line", "column")
        FILE_NAME_ID_FIELD_NUMBER: _ClassVar[int]
        FUNCTION_NAME_ID_FIELD_NUMBER: _ClassVar[int]
        LINE_FIELD_NUMBER: _ClassVar[int]
        COLUMN_FIELD_NUMBER: _ClassVar[int]
        file_name_id: int
        function_name_id: int
        line: int
        column: int
        def __init__(self, file_name_id: _Optional[int] = ..., function_name_id: _Optional[int] = ..., line: _Optional[int] = ..., column: _Optional[int] = ...) -> None: ...
    class StackFrame(_message.Message):
        __slots__ = ("file_location_id", "parent_frame_id")
        FILE_LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
        PARENT_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
        file_location_id: int
        parent_frame_id: int
        def __init__(self, file_location_id: _Optional[int] = ..., parent_frame_id: _Optional[int] = ...) -> None: ...
    FILE_NAMES_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAMES_FIELD_NUMBER: _ClassVar[int]
    FILE_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAMES_FIELD_NUMBER: _ClassVar[int]
    file_names: _containers.RepeatedScalarFieldContainer[str]
    function_names: _containers.RepeatedScalarFieldContainer[str]
    file_locations: _containers.RepeatedCompositeFieldContainer[StackFrameIndexProto.FileLocation]
    stack_frames: _containers.RepeatedCompositeFieldContainer[StackFrameIndexProto.StackFrame]
    def __init__(self, file_names: _Optional[_Iterable[str]] = ..., function_names: _Optional[_Iterable[str]] = ..., file_locations: _Optional[_Iterable[_Union[StackFrameIndexProto.FileLocation, _Mapping]]] = ..., stack_frames: _Optional[_Iterable[_Union[StackFrameIndexProto.StackFrame, _Mapping]]] = ...) -> None: ...

class HloInstructionProto(_message.Message):
    __slots__ = ("name", "opcode", "shape", "metadata", "parameter_number", "fusion_kind", "tuple_index", "dimensions", "window", "convolution_dimension_numbers", "slice_dimensions", "dynamic_slice_sizes", "padding_config", "channel_id", "custom_call_target", "dot_dimension_numbers", "fft_type", "fft_length", "gather_dimension_numbers", "gather_slice_sizes", "id", "operand_ids", "control_predecessor_ids", "called_computation_ids", "backend_config", "scatter_dimension_numbers", "feature_group_count", "batch_group_count", "is_stable", "comparison_direction", "use_global_device_ids", "k")
    class SliceDimensions(_message.Message):
        __slots__ = ("start", "limit", "stride")
        START_FIELD_NUMBER: _ClassVar[int]
        LIMIT_FIELD_NUMBER: _ClassVar[int]
        STRIDE_FIELD_NUMBER: _ClassVar[int]
        start: int
        limit: int
        stride: int
        def __init__(self, start: _Optional[int] = ..., limit: _Optional[int] = ..., stride: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPCODE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
    FUSION_KIND_FIELD_NUMBER: _ClassVar[int]
    TUPLE_INDEX_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    CONVOLUTION_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    SLICE_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_SLICE_SIZES_FIELD_NUMBER: _ClassVar[int]
    PADDING_CONFIG_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_TARGET_FIELD_NUMBER: _ClassVar[int]
    DOT_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    FFT_TYPE_FIELD_NUMBER: _ClassVar[int]
    FFT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    GATHER_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    GATHER_SLICE_SIZES_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERAND_IDS_FIELD_NUMBER: _ClassVar[int]
    CONTROL_PREDECESSOR_IDS_FIELD_NUMBER: _ClassVar[int]
    CALLED_COMPUTATION_IDS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_CONFIG_FIELD_NUMBER: _ClassVar[int]
    SCATTER_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    FEATURE_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    BATCH_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    IS_STABLE_FIELD_NUMBER: _ClassVar[int]
    COMPARISON_DIRECTION_FIELD_NUMBER: _ClassVar[int]
    USE_GLOBAL_DEVICE_IDS_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    name: str
    opcode: str
    shape: ShapeProto
    metadata: OpMetadata
    parameter_number: int
    fusion_kind: str
    tuple_index: int
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    window: Window
    convolution_dimension_numbers: ConvolutionDimensionNumbers
    slice_dimensions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto.SliceDimensions]
    dynamic_slice_sizes: _containers.RepeatedScalarFieldContainer[int]
    padding_config: PaddingConfig
    channel_id: int
    custom_call_target: str
    dot_dimension_numbers: DotDimensionNumbers
    fft_type: int
    fft_length: _containers.RepeatedScalarFieldContainer[int]
    gather_dimension_numbers: GatherDimensionNumbers
    gather_slice_sizes: _containers.RepeatedScalarFieldContainer[int]
    id: int
    operand_ids: _containers.RepeatedScalarFieldContainer[int]
    control_predecessor_ids: _containers.RepeatedScalarFieldContainer[int]
    called_computation_ids: _containers.RepeatedScalarFieldContainer[int]
    backend_config: bytes
    scatter_dimension_numbers: ScatterDimensionNumbers
    feature_group_count: int
    batch_group_count: int
    is_stable: bool
    comparison_direction: str
    use_global_device_ids: bool
    k: int
    def __init__(self, name: _Optional[str] = ..., opcode: _Optional[str] = ..., shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., metadata: _Optional[_Union[OpMetadata, _Mapping]] = ..., parameter_number: _Optional[int] = ..., fusion_kind: _Optional[str] = ..., tuple_index: _Optional[int] = ..., dimensions: _Optional[_Iterable[int]] = ..., window: _Optional[_Union[Window, _Mapping]] = ..., convolution_dimension_numbers: _Optional[_Union[ConvolutionDimensionNumbers, _Mapping]] = ..., slice_dimensions: _Optional[_Iterable[_Union[HloInstructionProto.SliceDimensions, _Mapping]]] = ..., dynamic_slice_sizes: _Optional[_Iterable[int]] = ..., padding_config: _Optional[_Union[PaddingConfig, _Mapping]] = ..., channel_id: _Optional[int] = ..., custom_call_target: _Optional[str] = ..., dot_dimension_numbers: _Optional[_Union[DotDimensionNumbers, _Mapping]] = ..., fft_type: _Optional[int] = ..., fft_length: _Optional[_Iterable[int]] = ..., gather_dimension_numbers: _Optional[_Union[GatherDimensionNumbers, _Mapping]] = ..., gather_slice_sizes: _Optional[_Iterable[int]] = ..., id: _Optional[int] = ..., operand_ids: _Optional[_Iterable[int]] = ..., control_predecessor_ids: _Optional[_Iterable[int]] = ..., called_computation_ids: _Optional[_Iterable[int]] = ..., backend_config: _Optional[bytes] = ..., scatter_dimension_numbers: _Optional[_Union[ScatterDimensionNumbers, _Mapping]] = ..., feature_group_count: _Optional[int] = ..., batch_group_count: _Optional[int] = ..., is_stable: bool = ..., comparison_direction: _Optional[str] = ..., use_global_device_ids: bool = ..., k: _Optional[int] = ...) -> None: ...

class HloComputationProto(_message.Message):
    __slots__ = ("name", "instructions", "program_shape", "id", "root_id", "is_fusion_computation", "execution_thread")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_ID_FIELD_NUMBER: _ClassVar[int]
    IS_FUSION_COMPUTATION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_THREAD_FIELD_NUMBER: _ClassVar[int]
    name: str
    instructions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto]
    program_shape: ProgramShapeProto
    id: int
    root_id: int
    is_fusion_computation: bool
    execution_thread: str
    def __init__(self, name: _Optional[str] = ..., instructions: _Optional[_Iterable[_Union[HloInstructionProto, _Mapping]]] = ..., program_shape: _Optional[_Union[ProgramShapeProto, _Mapping]] = ..., id: _Optional[int] = ..., root_id: _Optional[int] = ..., is_fusion_computation: bool = ..., execution_thread: _Optional[str] = ...) -> None: ...

class HloModuleProto(_message.Message):
    __slots__ = ("name", "entry_computation_name", "computations", "host_program_shape", "id", "entry_computation_id", "stack_frame_index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    HOST_PROGRAM_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_ID_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    entry_computation_name: str
    computations: _containers.RepeatedCompositeFieldContainer[HloComputationProto]
    host_program_shape: ProgramShapeProto
    id: int
    entry_computation_id: int
    stack_frame_index: StackFrameIndexProto
    def __init__(self, name: _Optional[str] = ..., entry_computation_name: _Optional[str] = ..., computations: _Optional[_Iterable[_Union[HloComputationProto, _Mapping]]] = ..., host_program_shape: _Optional[_Union[ProgramShapeProto, _Mapping]] = ..., id: _Optional[int] = ..., entry_computation_id: _Optional[int] = ..., stack_frame_index: _Optional[_Union[StackFrameIndexProto, _Mapping]] = ...) -> None: ...

class HloProto(_message.Message):
    __slots__ = ("hlo_module",)
    HLO_MODULE_FIELD_NUMBER: _ClassVar[int]
    hlo_module: HloModuleProto
    def __init__(self, hlo_module: _Optional[_Union[HloModuleProto, _Mapping]] = ...) -> None: ...
