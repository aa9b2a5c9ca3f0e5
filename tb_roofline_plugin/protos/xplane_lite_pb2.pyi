# Post-processed by tb_roofline_plugin.protos.generate (relative imports, private pool).
from . import xplane_pb2 as _xplane_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class XPlaneLite(_message.Message):
    __slots__ = ("id", "name", "lines", "event_metadata", "stat_metadata", "stats")
    class EventMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: _xplane_pb2.XEventMetadata
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[_xplane_pb2.XEventMetadata, _Mapping]] = ...) -> None: ...
    class StatMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: _xplane_pb2.XStatMetadata
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[_xplane_pb2.XStatMetadata, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    EVENT_METADATA_FIELD_NUMBER: _ClassVar[int]
    STAT_METADATA_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    lines: _containers.RepeatedCompositeFieldContainer[XLineLite]
    event_metadata: _containers.MessageMap[int, _xplane_pb2.XEventMetadata]
    stat_metadata: _containers.MessageMap[int, _xplane_pb2.XStatMetadata]
    stats: _containers.RepeatedCompositeFieldContainer[_xplane_pb2.XStat]
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., lines: _Optional[_Iterable[_Union[XLineLite, _Mapping]]] = ..., event_metadata: _Optional[_Mapping[int, _xplane_pb2.XEventMetadata]] = ..., stat_metadata: _Optional[_Mapping[int, _xplane_pb2.XStatMetadata]] = ..., stats: _Optional[_Iterable[_Union[_xplane_pb2.XStat, _Mapping]]] = ...) -> None: ...

class XLineLite(_message.Message):
    __slots__ = ("id", "display_id", "name", "display_name", "timestamp_ns", "duration_ps", "events")
    ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    DURATION_PS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    events: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, id: _Optional[int] = ..., display_id: _Optional[int] = ..., name: _Optional[str] = ..., display_name: _Optional[str] = ..., timestamp_ns: _Optional[int] = ..., duration_ps: _Optional[int] = ..., events: _Optional[_Iterable[bytes]] = ...) -> None: ...

class XLineHeader(_message.Message):
    __slots__ = ("id", "display_id", "name", "display_name", "timestamp_ns", "duration_ps")
    ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    DURATION_PS_FIELD_NUMBER: _ClassVar[int]
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    def __init__(self, id: _Optional[int] = ..., display_id: _Optional[int] = ..., name: _Optional[str] = ..., display_name: _Optional[str] = ..., timestamp_ns: _Optional[int] = ..., duration_ps: _Optional[int] = ...) -> None: ...
