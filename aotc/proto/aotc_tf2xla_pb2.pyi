from aotc.proto import aotc_tf_pb2 as _aotc_tf_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TensorId(_message.Message):
    __slots__ = ("node_name", "output_index")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    output_index: int
    def __init__(self, node_name: _Optional[str] = ..., output_index: _Optional[int] = ...) -> None: ...

class Feed(_message.Message):
    __slots__ = ("id", "shape", "name", "type")
    ID_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    id: TensorId
    shape: _aotc_tf_pb2.TensorShapeProto
    name: str
    type: _aotc_tf_pb2.DataType
    def __init__(self, id: _Optional[_Union[TensorId, _Mapping]] = ..., shape: _Optional[_Union[_aotc_tf_pb2.TensorShapeProto, _Mapping]] = ..., name: _Optional[str] = ..., type: _Optional[_Union[_aotc_tf_pb2.DataType, str]] = ...) -> None: ...

class Fetch(_message.Message):
    __slots__ = ("id", "name", "shape", "type")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    id: TensorId
    name: str
    shape: _aotc_tf_pb2.TensorShapeProto
    type: _aotc_tf_pb2.DataType
    def __init__(self, id: _Optional[_Union[TensorId, _Mapping]] = ..., name: _Optional[str] = ..., shape: _Optional[_Union[_aotc_tf_pb2.TensorShapeProto, _Mapping]] = ..., type: _Optional[_Union[_aotc_tf_pb2.DataType, str]] = ...) -> None: ...

class Variable(_message.Message):
    __slots__ = ("node_name", "name", "shape", "type", "readonly")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    READONLY_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    name: str
    shape: _aotc_tf_pb2.TensorShapeProto
    type: _aotc_tf_pb2.DataType
    readonly: bool
    def __init__(self, node_name: _Optional[str] = ..., name: _Optional[str] = ..., shape: _Optional[_Union[_aotc_tf_pb2.TensorShapeProto, _Mapping]] = ..., type: _Optional[_Union[_aotc_tf_pb2.DataType, str]] = ..., readonly: _Optional[bool] = ...) -> None: ...

class Config(_message.Message):
    __slots__ = ("feed", "fetch", "variable")
    FEED_FIELD_NUMBER: _ClassVar[int]
    FETCH_FIELD_NUMBER: _ClassVar[int]
    VARIABLE_FIELD_NUMBER: _ClassVar[int]
    feed: _containers.RepeatedCompositeFieldContainer[Feed]
    fetch: _containers.RepeatedCompositeFieldContainer[Fetch]
    variable: _containers.RepeatedCompositeFieldContainer[Variable]
    def __init__(self, feed: _Optional[_Iterable[_Union[Feed, _Mapping]]] = ..., fetch: _Optional[_Iterable[_Union[Fetch, _Mapping]]] = ..., variable: _Optional[_Iterable[_Union[Variable, _Mapping]]] = ...) -> None: ...
