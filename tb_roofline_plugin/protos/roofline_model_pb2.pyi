# Post-processed by tb_roofline_plugin.protos.generate (relative imports, private pool).
from . import diagnostics_pb2 as _diagnostics_pb2
from . import source_info_pb2 as _source_info_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RecordType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INVALID_RECORD_TYPE: _ClassVar[RecordType]
    ALL: _ClassVar[RecordType]
    AVERAGE_STEP: _ClassVar[RecordType]
    PER_STEP: _ClassVar[RecordType]
    ALL_HW: _ClassVar[RecordType]
INVALID_RECORD_TYPE: RecordType
ALL: RecordType
AVERAGE_STEP: RecordType
PER_STEP: RecordType
ALL_HW: RecordType

class RooflineModelDatabase(_message.Message):
    __slots__ = ("device_type", "megacore", "has_cmem", "has_merged_vmem", "peak_flop_rate", "peak_hbm_bw", "peak_cmem_read_bw", "peak_cmem_write_bw", "peak_vmem_read_bw", "peak_vmem_write_bw", "roofline_model_record", "diagnostics", "time_scale_multiplier")
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    MEGACORE_FIELD_NUMBER: _ClassVar[int]
    HAS_CMEM_FIELD_NUMBER: _ClassVar[int]
    HAS_MERGED_VMEM_FIELD_NUMBER: _ClassVar[int]
    PEAK_FLOP_RATE_FIELD_NUMBER: _ClassVar[int]
    PEAK_HBM_BW_FIELD_NUMBER: _ClassVar[int]
    PEAK_CMEM_READ_BW_FIELD_NUMBER: _ClassVar[int]
    PEAK_CMEM_WRITE_BW_FIELD_NUMBER: _ClassVar[int]
    PEAK_VMEM_READ_BW_FIELD_NUMBER: _ClassVar[int]
    PEAK_VMEM_WRITE_BW_FIELD_NUMBER: _ClassVar[int]
    ROOFLINE_MODEL_RECORD_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    TIME_SCALE_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    device_type: str
    megacore: bool
    has_cmem: bool
    has_merged_vmem: bool
    peak_flop_rate: float
    peak_hbm_bw: float
    peak_cmem_read_bw: float
    peak_cmem_write_bw: float
    peak_vmem_read_bw: float
    peak_vmem_write_bw: float
    roofline_model_record: _containers.RepeatedCompositeFieldContainer[RooflineModelRecord]
    diagnostics: _diagnostics_pb2.Diagnostics
    time_scale_multiplier: float
    def __init__(self, device_type: _Optional[str] = ..., megacore: bool = ..., has_cmem: bool = ..., has_merged_vmem: bool = ..., peak_flop_rate: _Optional[float] = ..., peak_hbm_bw: _Optional[float] = ..., peak_cmem_read_bw: _Optional[float] = ..., peak_cmem_write_bw: _Optional[float] = ..., peak_vmem_read_bw: _Optional[float] = ..., peak_vmem_write_bw: _Optional[float] = ..., roofline_model_record: _Optional[_Iterable[_Union[RooflineModelRecord, _Mapping]]] = ..., diagnostics: _Optional[_Union[_diagnostics_pb2.Diagnostics, _Mapping]] = ..., time_scale_multiplier: _Optional[float] = ...) -> None: ...

class RooflineModelRecord(_message.Message):
    __slots__ = ("record_type", "step_num", "rank", "hlo_module_id", "hlo_category", "hlo_name", "occurrences", "total_time_in_us", "total_time_per_core_in_us", "total_time_in_percentage", "avg_time_in_us", "total_self_time_in_us", "avg_self_time_in_us", "total_self_time_as_fraction", "cumulative_total_self_time_as_fraction", "dma_stall_fraction", "measured_flop_rate", "model_flop_rate", "measured_memory_bw", "hbm_bw", "cmem_read_bw", "cmem_write_bw", "vmem_read_bw", "vmem_write_bw", "operational_intensity", "hbm_operational_intensity", "cmem_read_operational_intensity", "cmem_write_operational_intensity", "vmem_read_operational_intensity", "vmem_write_operational_intensity", "bottleneck_operational_intensity", "bound_by", "optimal_flop_rate", "roofline_efficiency", "flop_rate_relative_to_hw_limit", "memory_bw_relative_to_hw_limit", "include_infeed_outfeed", "apply_time_scale_multiplier", "flops", "flops_v2", "bytes_accessed", "source_info")
    RECORD_TYPE_FIELD_NUMBER: _ClassVar[int]
    STEP_NUM_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    HLO_MODULE_ID_FIELD_NUMBER: _ClassVar[int]
    HLO_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    HLO_NAME_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TIME_IN_US_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TIME_PER_CORE_IN_US_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TIME_IN_PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    AVG_TIME_IN_US_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SELF_TIME_IN_US_FIELD_NUMBER: _ClassVar[int]
    AVG_SELF_TIME_IN_US_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SELF_TIME_AS_FRACTION_FIELD_NUMBER: _ClassVar[int]
    CUMULATIVE_TOTAL_SELF_TIME_AS_FRACTION_FIELD_NUMBER: _ClassVar[int]
    DMA_STALL_FRACTION_FIELD_NUMBER: _ClassVar[int]
    MEASURED_FLOP_RATE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FLOP_RATE_FIELD_NUMBER: _ClassVar[int]
    MEASURED_MEMORY_BW_FIELD_NUMBER: _ClassVar[int]
    HBM_BW_FIELD_NUMBER: _ClassVar[int]
    CMEM_READ_BW_FIELD_NUMBER: _ClassVar[int]
    CMEM_WRITE_BW_FIELD_NUMBER: _ClassVar[int]
    VMEM_READ_BW_FIELD_NUMBER: _ClassVar[int]
    VMEM_WRITE_BW_FIELD_NUMBER: _ClassVar[int]
    OPERATIONAL_INTENSITY_FIELD_NUMBER: _ClassVar[int]
    HBM_OPERATIONAL_INTENSITY_FIELD_NUMBER: _ClassVar[int]
    CMEM_READ_OPERATIONAL_INTENSITY_FIELD_NUMBER: _ClassVar[int]
    CMEM_WRITE_OPERATIONAL_INTENSITY_FIELD_NUMBER: _ClassVar[int]
    VMEM_READ_OPERATIONAL_INTENSITY_FIELD_NUMBER: _ClassVar[int]
    VMEM_WRITE_OPERATIONAL_INTENSITY_FIELD_NUMBER: _ClassVar[int]
    BOTTLENECK_OPERATIONAL_INTENSITY_FIELD_NUMBER: _ClassVar[int]
    BOUND_BY_FIELD_NUMBER: _ClassVar[int]
    OPTIMAL_FLOP_RATE_FIELD_NUMBER: _ClassVar[int]
    ROOFLINE_EFFICIENCY_FIELD_NUMBER: _ClassVar[int]
    FLOP_RATE_RELATIVE_TO_HW_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BW_RELATIVE_TO_HW_LIMIT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_INFEED_OUTFEED_FIELD_NUMBER: _ClassVar[int]
    APPLY_TIME_SCALE_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    FLOPS_FIELD_NUMBER: _ClassVar[int]
    FLOPS_V2_FIELD_NUMBER: _ClassVar[int]
    BYTES_ACCESSED_FIELD_NUMBER: _ClassVar[int]
    SOURCE_INFO_FIELD_NUMBER: _ClassVar[int]
    record_type: RecordType
    step_num: int
    rank: int
    hlo_module_id: int
    hlo_category: str
    hlo_name: str
    occurrences: int
    total_time_in_us: float
    total_time_per_core_in_us: float
    total_time_in_percentage: float
    avg_time_in_us: float
    total_self_time_in_us: float
    avg_self_time_in_us: float
    total_self_time_as_fraction: float
    cumulative_total_self_time_as_fraction: float
    dma_stall_fraction: float
    measured_flop_rate: float
    model_flop_rate: float
    measured_memory_bw: float
    hbm_bw: float
    cmem_read_bw: float
    cmem_write_bw: float
    vmem_read_bw: float
    vmem_write_bw: float
    operational_intensity: float
    hbm_operational_intensity: float
    cmem_read_operational_intensity: float
    cmem_write_operational_intensity: float
    vmem_read_operational_intensity: float
    vmem_write_operational_intensity: float
    bottleneck_operational_intensity: float
    bound_by: str
    optimal_flop_rate: float
    roofline_efficiency: float
    flop_rate_relative_to_hw_limit: float
    memory_bw_relative_to_hw_limit: float
    include_infeed_outfeed: bool
    apply_time_scale_multiplier: bool
    flops: int
    flops_v2: float
    bytes_accessed: int
    source_info: _source_info_pb2.SourceInfo
    def __init__(self, record_type: _Optional[_Union[RecordType, str]] = ..., step_num: _Optional[int] = ..., rank: _Optional[int] = ..., hlo_module_id: _Optional[int] = ..., hlo_category: _Optional[str] = ..., hlo_name: _Optional[str] = ..., occurrences: _Optional[int] = ..., total_time_in_us: _Optional[float] = ..., total_time_per_core_in_us: _Optional[float] = ..., total_time_in_percentage: _Optional[float] = ..., avg_time_in_us: _Optional[float] = ..., total_self_time_in_us: _Optional[float] = ..., avg_self_time_in_us: _Optional[float] = ..., total_self_time_as_fraction: _Optional[float] = ..., cumulative_total_self_time_as_fraction: _Optional[float] = ..., dma_stall_fraction: _Optional[float] = ..., measured_flop_rate: _Optional[float] = ..., model_flop_rate: _Optional[float] = ..., measured_memory_bw: _Optional[float] = ..., hbm_bw: _Optional[float] = ..., cmem_read_bw: _Optional[float] = ..., cmem_write_bw: _Optional[float] = ..., vmem_read_bw: _Optional[float] = ..., vmem_write_bw: _Optional[float] = ..., operational_intensity: _Optional[float] = ..., hbm_operational_intensity: _Optional[float] = ..., cmem_read_operational_intensity: _Optional[float] = ..., cmem_write_operational_intensity: _Optional[float] = ..., vmem_read_operational_intensity: _Optional[float] = ..., vmem_write_operational_intensity: _Optional[float] = ..., bottleneck_operational_intensity: _Optional[float] = ..., bound_by: _Optional[str] = ..., optimal_flop_rate: _Optional[float] = ..., roofline_efficiency: _Optional[float] = ..., flop_rate_relative_to_hw_limit: _Optional[float] = ..., memory_bw_relative_to_hw_limit: _Optional[float] = ..., include_infeed_outfeed: bool = ..., apply_time_scale_multiplier: bool = ..., flops: _Optional[int] = ..., flops_v2: _Optional[float] = ..., bytes_accessed: _Optional[int] = ..., source_info: _Optional[_Union[_source_info_pb2.SourceInfo, _Mapping]] = ...) -> None: ...
