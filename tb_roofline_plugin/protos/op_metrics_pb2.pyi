# Post-processed by tb_roofline_plugin.protos.generate (relative imports, private pool).
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OpMetrics(_message.Message):
    __slots__ = ()
    class MemoryAccessed(_message.Message):
        __slots__ = ("operation_type", "memory_space", "bytes_accessed")
        class OperationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            UNKNOWN: _ClassVar[OpMetrics.MemoryAccessed.OperationType]
            READ: _ClassVar[OpMetrics.MemoryAccessed.OperationType]
            WRITE: _ClassVar[OpMetrics.MemoryAccessed.OperationType]
        UNKNOWN: OpMetrics.MemoryAccessed.OperationType
        READ: OpMetrics.MemoryAccessed.OperationType
        WRITE: OpMetrics.MemoryAccessed.OperationType
        OPERATION_TYPE_FIELD_NUMBER: _ClassVar[int]
        MEMORY_SPACE_FIELD_NUMBER: _ClassVar[int]
        BYTES_ACCESSED_FIELD_NUMBER: _ClassVar[int]
        operation_type: OpMetrics.MemoryAccessed.OperationType
        memory_space: int
        bytes_accessed: int
        def __init__(self, operation_type: _Optional[_Union[OpMetrics.MemoryAccessed.OperationType, str]] = ..., memory_space: _Optional[int] = ..., bytes_accessed: _Optional[int] = ...) -> None: ...
    def __init__(self) -> None: ...

class MemoryAccessBreakdown(_message.Message):
    __slots__ = ("memory_accessed",)
    MEMORY_ACCESSED_FIELD_NUMBER: _ClassVar[int]
    memory_accessed: _containers.RepeatedCompositeFieldContainer[OpMetrics.MemoryAccessed]
    def __init__(self, memory_accessed: _Optional[_Iterable[_Union[OpMetrics.MemoryAccessed, _Mapping]]] = ...) -> None: ...
