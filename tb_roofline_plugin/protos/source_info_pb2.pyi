# Post-processed by tb_roofline_plugin.protos.generate (relative imports, private pool).
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class SourceInfo(_message.Message):
    __slots__ = ("file_name", "line_number", "stack_frame")
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    LINE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_FIELD_NUMBER: _ClassVar[int]
    file_name: str
    line_number: int
    stack_frame: str
    def __init__(self, file_name: _Optional[str] = ..., line_number: _Optional[int] = ..., stack_frame: _Optional[str] = ...) -> None: ...
