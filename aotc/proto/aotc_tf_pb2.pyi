from google.protobuf import any_pb2 as _any_pb2
from google.protobuf import wrappers_pb2 as _wrappers_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DT_INVALID: _ClassVar[DataType]
    DT_FLOAT: _ClassVar[DataType]
    DT_DOUBLE: _ClassVar[DataType]
    DT_INT32: _ClassVar[DataType]
    DT_UINT8: _ClassVar[DataType]
    DT_INT16: _ClassVar[DataType]
    DT_INT8: _ClassVar[DataType]
    DT_STRING: _ClassVar[DataType]
    DT_COMPLEX64: _ClassVar[DataType]
    DT_INT64: _ClassVar[DataType]
    DT_BOOL: _ClassVar[DataType]
    DT_QINT8: _ClassVar[DataType]
    DT_QUINT8: _ClassVar[DataType]
    DT_QINT32: _ClassVar[DataType]
    DT_BFLOAT16: _ClassVar[DataType]
    DT_QINT16: _ClassVar[DataType]
    DT_QUINT16: _ClassVar[DataType]
    DT_UINT16: _ClassVar[DataType]
    DT_COMPLEX128: _ClassVar[DataType]
    DT_HALF: _ClassVar[DataType]
    DT_RESOURCE: _ClassVar[DataType]
    DT_VARIANT: _ClassVar[DataType]
    DT_UINT32: _ClassVar[DataType]
    DT_UINT64: _ClassVar[DataType]
    DT_FLOAT8_E5M2: _ClassVar[DataType]
    DT_FLOAT8_E4M3FN: _ClassVar[DataType]
    DT_FLOAT8_E4M3FNUZ: _ClassVar[DataType]
    DT_FLOAT8_E4M3B11FNUZ: _ClassVar[DataType]
    DT_FLOAT8_E5M2FNUZ: _ClassVar[DataType]
    DT_INT4: _ClassVar[DataType]
    DT_UINT4: _ClassVar[DataType]
    DT_INT2: _ClassVar[DataType]
    DT_UINT2: _ClassVar[DataType]
    DT_FLOAT4_E2M1FN: _ClassVar[DataType]
    DT_FLOAT_REF: _ClassVar[DataType]
    DT_DOUBLE_REF: _ClassVar[DataType]
    DT_INT32_REF: _ClassVar[DataType]
    DT_UINT8_REF: _ClassVar[DataType]
    DT_INT16_REF: _ClassVar[DataType]
    DT_INT8_REF: _ClassVar[DataType]
    DT_STRING_REF: _ClassVar[DataType]
    DT_COMPLEX64_REF: _ClassVar[DataType]
    DT_INT64_REF: _ClassVar[DataType]
    DT_BOOL_REF: _ClassVar[DataType]
    DT_QINT8_REF: _ClassVar[DataType]
    DT_QUINT8_REF: _ClassVar[DataType]
    DT_QINT32_REF: _ClassVar[DataType]
    DT_BFLOAT16_REF: _ClassVar[DataType]
    DT_QINT16_REF: _ClassVar[DataType]
    DT_QUINT16_REF: _ClassVar[DataType]
    DT_UINT16_REF: _ClassVar[DataType]
    DT_COMPLEX128_REF: _ClassVar[DataType]
    DT_HALF_REF: _ClassVar[DataType]
    DT_RESOURCE_REF: _ClassVar[DataType]
    DT_VARIANT_REF: _ClassVar[DataType]
    DT_UINT32_REF: _ClassVar[DataType]
    DT_UINT64_REF: _ClassVar[DataType]
    DT_FLOAT8_E5M2_REF: _ClassVar[DataType]
    DT_FLOAT8_E4M3FN_REF: _ClassVar[DataType]
    DT_FLOAT8_E4M3FNUZ_REF: _ClassVar[DataType]
    DT_FLOAT8_E4M3B11FNUZ_REF: _ClassVar[DataType]
    DT_FLOAT8_E5M2FNUZ_REF: _ClassVar[DataType]
    DT_INT4_REF: _ClassVar[DataType]
    DT_UINT4_REF: _ClassVar[DataType]
    DT_INT2_REF: _ClassVar[DataType]
    DT_UINT2_REF: _ClassVar[DataType]
    DT_FLOAT4_E2M1FN_REF: _ClassVar[DataType]

class FullTypeId(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TFT_UNSET: _ClassVar[FullTypeId]
    TFT_VAR: _ClassVar[FullTypeId]
    TFT_ANY: _ClassVar[FullTypeId]
    TFT_PRODUCT: _ClassVar[FullTypeId]
    TFT_NAMED: _ClassVar[FullTypeId]
    TFT_FOR_EACH: _ClassVar[FullTypeId]
    TFT_CALLABLE: _ClassVar[FullTypeId]
    TFT_TENSOR: _ClassVar[FullTypeId]
    TFT_ARRAY: _ClassVar[FullTypeId]
    TFT_OPTIONAL: _ClassVar[FullTypeId]
    TFT_LITERAL: _ClassVar[FullTypeId]
    TFT_ENCODED: _ClassVar[FullTypeId]
    TFT_SHAPE_TENSOR: _ClassVar[FullTypeId]
    TFT_BOOL: _ClassVar[FullTypeId]
    TFT_UINT8: _ClassVar[FullTypeId]
    TFT_UINT16: _ClassVar[FullTypeId]
    TFT_UINT32: _ClassVar[FullTypeId]
    TFT_UINT64: _ClassVar[FullTypeId]
    TFT_INT8: _ClassVar[FullTypeId]
    TFT_INT16: _ClassVar[FullTypeId]
    TFT_INT32: _ClassVar[FullTypeId]
    TFT_INT64: _ClassVar[FullTypeId]
    TFT_HALF: _ClassVar[FullTypeId]
    TFT_FLOAT: _ClassVar[FullTypeId]
    TFT_DOUBLE: _ClassVar[FullTypeId]
    TFT_BFLOAT16: _ClassVar[FullTypeId]
    TFT_COMPLEX64: _ClassVar[FullTypeId]
    TFT_COMPLEX128: _ClassVar[FullTypeId]
    TFT_STRING: _ClassVar[FullTypeId]
    TFT_DATASET: _ClassVar[FullTypeId]
    TFT_RAGGED: _ClassVar[FullTypeId]
    TFT_ITERATOR: _ClassVar[FullTypeId]
    TFT_MUTEX_LOCK: _ClassVar[FullTypeId]
    TFT_LEGACY_VARIANT: _ClassVar[FullTypeId]

class VariableSynchronization(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VARIABLE_SYNCHRONIZATION_AUTO: _ClassVar[VariableSynchronization]
    VARIABLE_SYNCHRONIZATION_NONE: _ClassVar[VariableSynchronization]
    VARIABLE_SYNCHRONIZATION_ON_WRITE: _ClassVar[VariableSynchronization]
    VARIABLE_SYNCHRONIZATION_ON_READ: _ClassVar[VariableSynchronization]

class VariableAggregation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VARIABLE_AGGREGATION_NONE: _ClassVar[VariableAggregation]
    VARIABLE_AGGREGATION_SUM: _ClassVar[VariableAggregation]
    VARIABLE_AGGREGATION_MEAN: _ClassVar[VariableAggregation]
    VARIABLE_AGGREGATION_ONLY_FIRST_REPLICA: _ClassVar[VariableAggregation]
DT_INVALID: DataType
DT_FLOAT: DataType
DT_DOUBLE: DataType
DT_INT32: DataType
DT_UINT8: DataType
DT_INT16: DataType
DT_INT8: DataType
DT_STRING: DataType
DT_COMPLEX64: DataType
DT_INT64: DataType
DT_BOOL: DataType
DT_QINT8: DataType
DT_QUINT8: DataType
DT_QINT32: DataType
DT_BFLOAT16: DataType
DT_QINT16: DataType
DT_QUINT16: DataType
DT_UINT16: DataType
DT_COMPLEX128: DataType
DT_HALF: DataType
DT_RESOURCE: DataType
DT_VARIANT: DataType
DT_UINT32: DataType
DT_UINT64: DataType
DT_FLOAT8_E5M2: DataType
DT_FLOAT8_E4M3FN: DataType
DT_FLOAT8_E4M3FNUZ: DataType
DT_FLOAT8_E4M3B11FNUZ: DataType
DT_FLOAT8_E5M2FNUZ: DataType
DT_INT4: DataType
DT_UINT4: DataType
DT_INT2: DataType
DT_UINT2: DataType
DT_FLOAT4_E2M1FN: DataType
DT_FLOAT_REF: DataType
DT_DOUBLE_REF: DataType
DT_INT32_REF: DataType
DT_UINT8_REF: DataType
DT_INT16_REF: DataType
DT_INT8_REF: DataType
DT_STRING_REF: DataType
DT_COMPLEX64_REF: DataType
DT_INT64_REF: DataType
DT_BOOL_REF: DataType
DT_QINT8_REF: DataType
DT_QUINT8_REF: DataType
DT_QINT32_REF: DataType
DT_BFLOAT16_REF: DataType
DT_QINT16_REF: DataType
DT_QUINT16_REF: DataType
DT_UINT16_REF: DataType
DT_COMPLEX128_REF: DataType
DT_HALF_REF: DataType
DT_RESOURCE_REF: DataType
DT_VARIANT_REF: DataType
DT_UINT32_REF: DataType
DT_UINT64_REF: DataType
DT_FLOAT8_E5M2_REF: DataType
DT_FLOAT8_E4M3FN_REF: DataType
DT_FLOAT8_E4M3FNUZ_REF: DataType
DT_FLOAT8_E4M3B11FNUZ_REF: DataType
DT_FLOAT8_E5M2FNUZ_REF: DataType
DT_INT4_REF: DataType
DT_UINT4_REF: DataType
DT_INT2_REF: DataType
DT_UINT2_REF: DataType
DT_FLOAT4_E2M1FN_REF: DataType
TFT_UNSET: FullTypeId
TFT_VAR: FullTypeId
TFT_ANY: FullTypeId
TFT_PRODUCT: FullTypeId
TFT_NAMED: FullTypeId
TFT_FOR_EACH: FullTypeId
TFT_CALLABLE: FullTypeId
TFT_TENSOR: FullTypeId
TFT_ARRAY: FullTypeId
TFT_OPTIONAL: FullTypeId
TFT_LITERAL: FullTypeId
TFT_ENCODED: FullTypeId
TFT_SHAPE_TENSOR: FullTypeId
TFT_BOOL: FullTypeId
TFT_UINT8: FullTypeId
TFT_UINT16: FullTypeId
TFT_UINT32: FullTypeId
TFT_UINT64: FullTypeId
TFT_INT8: FullTypeId
TFT_INT16: FullTypeId
TFT_INT32: FullTypeId
TFT_INT64: FullTypeId
TFT_HALF: FullTypeId
TFT_FLOAT: FullTypeId
TFT_DOUBLE: FullTypeId
TFT_BFLOAT16: FullTypeId
TFT_COMPLEX64: FullTypeId
TFT_COMPLEX128: FullTypeId
TFT_STRING: FullTypeId
TFT_DATASET: FullTypeId
TFT_RAGGED: FullTypeId
TFT_ITERATOR: FullTypeId
TFT_MUTEX_LOCK: FullTypeId
TFT_LEGACY_VARIANT: FullTypeId
VARIABLE_SYNCHRONIZATION_AUTO: VariableSynchronization
VARIABLE_SYNCHRONIZATION_NONE: VariableSynchronization
VARIABLE_SYNCHRONIZATION_ON_WRITE: VariableSynchronization
VARIABLE_SYNCHRONIZATION_ON_READ: VariableSynchronization
VARIABLE_AGGREGATION_NONE: VariableAggregation
VARIABLE_AGGREGATION_SUM: VariableAggregation
VARIABLE_AGGREGATION_MEAN: VariableAggregation
VARIABLE_AGGREGATION_ONLY_FIRST_REPLICA: VariableAggregation

class TensorShapeProto(_message.Message):
    __slots__ = ("dim", "unknown_rank")
    class Dim(_message.Message):
        __slots__ = ("size", "name")
        SIZE_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        size: int
        name: str
        def __init__(self, size: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...
    DIM_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_RANK_FIELD_NUMBER: _ClassVar[int]
    dim: _containers.RepeatedCompositeFieldContainer[TensorShapeProto.Dim]
    unknown_rank: bool
    def __init__(self, dim: _Optional[_Iterable[_Union[TensorShapeProto.Dim, _Mapping]]] = ..., unknown_rank: _Optional[bool] = ...) -> None: ...

class ResourceHandleProto(_message.Message):
    __slots__ = ("device", "container", "name", "hash_code", "maybe_type_name", "dtypes_and_shapes")
    class DtypeAndShape(_message.Message):
        __slots__ = ("dtype", "shape")
        DTYPE_FIELD_NUMBER: _ClassVar[int]
        SHAPE_FIELD_NUMBER: _ClassVar[int]
        dtype: DataType
        shape: TensorShapeProto
        def __init__(self, dtype: _Optional[_Union[DataType, str]] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ...) -> None: ...
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    HASH_CODE_FIELD_NUMBER: _ClassVar[int]
    MAYBE_TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    DTYPES_AND_SHAPES_FIELD_NUMBER: _ClassVar[int]
    device: str
    container: str
    name: str
    hash_code: int
    maybe_type_name: str
    dtypes_and_shapes: _containers.RepeatedCompositeFieldContainer[ResourceHandleProto.DtypeAndShape]
    def __init__(self, device: _Optional[str] = ..., container: _Optional[str] = ..., name: _Optional[str] = ..., hash_code: _Optional[int] = ..., maybe_type_name: _Optional[str] = ..., dtypes_and_shapes: _Optional[_Iterable[_Union[ResourceHandleProto.DtypeAndShape, _Mapping]]] = ...) -> None: ...

class TensorProto(_message.Message):
    __slots__ = ("dtype", "tensor_shape", "version_number", "tensor_content", "half_val", "float_val", "double_val", "int_val", "string_val", "scomplex_val", "int64_val", "bool_val", "dcomplex_val", "resource_handle_val", "variant_val", "uint32_val", "uint64_val", "float8_val")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SHAPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TENSOR_CONTENT_FIELD_NUMBER: _ClassVar[int]
    HALF_VAL_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VAL_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VAL_FIELD_NUMBER: _ClassVar[int]
    INT_VAL_FIELD_NUMBER: _ClassVar[int]
    STRING_VAL_FIELD_NUMBER: _ClassVar[int]
    SCOMPLEX_VAL_FIELD_NUMBER: _ClassVar[int]
    INT64_VAL_FIELD_NUMBER: _ClassVar[int]
    BOOL_VAL_FIELD_NUMBER: _ClassVar[int]
    DCOMPLEX_VAL_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_HANDLE_VAL_FIELD_NUMBER: _ClassVar[int]
    VARIANT_VAL_FIELD_NUMBER: _ClassVar[int]
    UINT32_VAL_FIELD_NUMBER: _ClassVar[int]
    UINT64_VAL_FIELD_NUMBER: _ClassVar[int]
    FLOAT8_VAL_FIELD_NUMBER: _ClassVar[int]
    dtype: DataType
    tensor_shape: TensorShapeProto
    version_number: int
    tensor_content: bytes
    half_val: _containers.RepeatedScalarFieldContainer[int]
    float_val: _containers.RepeatedScalarFieldContainer[float]
    double_val: _containers.RepeatedScalarFieldContainer[float]
    int_val: _containers.RepeatedScalarFieldContainer[int]
    string_val: _containers.RepeatedScalarFieldContainer[bytes]
    scomplex_val: _containers.RepeatedScalarFieldContainer[float]
    int64_val: _containers.RepeatedScalarFieldContainer[int]
    bool_val: _containers.RepeatedScalarFieldContainer[bool]
    dcomplex_val: _containers.RepeatedScalarFieldContainer[float]
    resource_handle_val: _containers.RepeatedCompositeFieldContainer[ResourceHandleProto]
    variant_val: _containers.RepeatedCompositeFieldContainer[VariantTensorDataProto]
    uint32_val: _containers.RepeatedScalarFieldContainer[int]
    uint64_val: _containers.RepeatedScalarFieldContainer[int]
    float8_val: bytes
    def __init__(self, dtype: _Optional[_Union[DataType, str]] = ..., tensor_shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., version_number: _Optional[int] = ..., tensor_content: _Optional[bytes] = ..., half_val: _Optional[_Iterable[int]] = ..., float_val: _Optional[_Iterable[float]] = ..., double_val: _Optional[_Iterable[float]] = ..., int_val: _Optional[_Iterable[int]] = ..., string_val: _Optional[_Iterable[bytes]] = ..., scomplex_val: _Optional[_Iterable[float]] = ..., int64_val: _Optional[_Iterable[int]] = ..., bool_val: _Optional[_Iterable[bool]] = ..., dcomplex_val: _Optional[_Iterable[float]] = ..., resource_handle_val: _Optional[_Iterable[_Union[ResourceHandleProto, _Mapping]]] = ..., variant_val: _Optional[_Iterable[_Union[VariantTensorDataProto, _Mapping]]] = ..., uint32_val: _Optional[_Iterable[int]] = ..., uint64_val: _Optional[_Iterable[int]] = ..., float8_val: _Optional[bytes] = ...) -> None: ...

class VariantTensorDataProto(_message.Message):
    __slots__ = ("type_name", "metadata", "tensors")
    TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    type_name: str
    metadata: bytes
    tensors: _containers.RepeatedCompositeFieldContainer[TensorProto]
    def __init__(self, type_name: _Optional[str] = ..., metadata: _Optional[bytes] = ..., tensors: _Optional[_Iterable[_Union[TensorProto, _Mapping]]] = ...) -> None: ...

class AttrValue(_message.Message):
    __slots__ = ("s", "i", "f", "b", "type", "shape", "tensor", "list", "func", "placeholder")
    class ListValue(_message.Message):
        __slots__ = ("s", "i", "f", "b", "type", "shape", "tensor", "func")
        S_FIELD_NUMBER: _ClassVar[int]
        I_FIELD_NUMBER: _ClassVar[int]
        F_FIELD_NUMBER: _ClassVar[int]
        B_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        SHAPE_FIELD_NUMBER: _ClassVar[int]
        TENSOR_FIELD_NUMBER: _ClassVar[int]
        FUNC_FIELD_NUMBER: _ClassVar[int]
        s: _containers.RepeatedScalarFieldContainer[bytes]
        i: _containers.RepeatedScalarFieldContainer[int]
        f: _containers.RepeatedScalarFieldContainer[float]
        b: _containers.RepeatedScalarFieldContainer[bool]
        type: _containers.RepeatedScalarFieldContainer[DataType]
        shape: _containers.RepeatedCompositeFieldContainer[TensorShapeProto]
        tensor: _containers.RepeatedCompositeFieldContainer[TensorProto]
        func: _containers.RepeatedCompositeFieldContainer[NameAttrList]
        def __init__(self, s: _Optional[_Iterable[bytes]] = ..., i: _Optional[_Iterable[int]] = ..., f: _Optional[_Iterable[float]] = ..., b: _Optional[_Iterable[bool]] = ..., type: _Optional[_Iterable[_Union[DataType, str]]] = ..., shape: _Optional[_Iterable[_Union[TensorShapeProto, _Mapping]]] = ..., tensor: _Optional[_Iterable[_Union[TensorProto, _Mapping]]] = ..., func: _Optional[_Iterable[_Union[NameAttrList, _Mapping]]] = ...) -> None: ...
    S_FIELD_NUMBER: _ClassVar[int]
    I_FIELD_NUMBER: _ClassVar[int]
    F_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    LIST_FIELD_NUMBER: _ClassVar[int]
    FUNC_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_FIELD_NUMBER: _ClassVar[int]
    s: bytes
    i: int
    f: float
    b: bool
    type: DataType
    shape: TensorShapeProto
    tensor: TensorProto
    list: AttrValue.ListValue
    func: NameAttrList
    placeholder: str
    def __init__(self, s: _Optional[bytes] = ..., i: _Optional[int] = ..., f: _Optional[float] = ..., b: _Optional[bool] = ..., type: _Optional[_Union[DataType, str]] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., tensor: _Optional[_Union[TensorProto, _Mapping]] = ..., list: _Optional[_Union[AttrValue.ListValue, _Mapping]] = ..., func: _Optional[_Union[NameAttrList, _Mapping]] = ..., placeholder: _Optional[str] = ...) -> None: ...

class NameAttrList(_message.Message):
    __slots__ = ("name", "attr")
    class AttrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AttrValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    name: str
    attr: _containers.MessageMap[str, AttrValue]
    def __init__(self, name: _Optional[str] = ..., attr: _Optional[_Mapping[str, AttrValue]] = ...) -> None: ...

class FullTypeDef(_message.Message):
    __slots__ = ("type_id", "args", "s", "i")
    TYPE_ID_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    S_FIELD_NUMBER: _ClassVar[int]
    I_FIELD_NUMBER: _ClassVar[int]
    type_id: FullTypeId
    args: _containers.RepeatedCompositeFieldContainer[FullTypeDef]
    s: str
    i: int
    def __init__(self, type_id: _Optional[_Union[FullTypeId, str]] = ..., args: _Optional[_Iterable[_Union[FullTypeDef, _Mapping]]] = ..., s: _Optional[str] = ..., i: _Optional[int] = ...) -> None: ...

class NodeDef(_message.Message):
    __slots__ = ("name", "op", "input", "device", "attr", "experimental_debug_info", "experimental_type")
    class ExperimentalDebugInfo(_message.Message):
        __slots__ = ("original_node_names", "original_func_names")
        ORIGINAL_NODE_NAMES_FIELD_NUMBER: _ClassVar[int]
        ORIGINAL_FUNC_NAMES_FIELD_NUMBER: _ClassVar[int]
        original_node_names: _containers.RepeatedScalarFieldContainer[str]
        original_func_names: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, original_node_names: _Optional[_Iterable[str]] = ..., original_func_names: _Optional[_Iterable[str]] = ...) -> None: ...
    class AttrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AttrValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENTAL_DEBUG_INFO_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENTAL_TYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    op: str
    input: _containers.RepeatedScalarFieldContainer[str]
    device: str
    attr: _containers.MessageMap[str, AttrValue]
    experimental_debug_info: NodeDef.ExperimentalDebugInfo
    experimental_type: FullTypeDef
    def __init__(self, name: _Optional[str] = ..., op: _Optional[str] = ..., input: _Optional[_Iterable[str]] = ..., device: _Optional[str] = ..., attr: _Optional[_Mapping[str, AttrValue]] = ..., experimental_debug_info: _Optional[_Union[NodeDef.ExperimentalDebugInfo, _Mapping]] = ..., experimental_type: _Optional[_Union[FullTypeDef, _Mapping]] = ...) -> None: ...

class OpDef(_message.Message):
    __slots__ = ("name", "input_arg", "output_arg", "control_output", "attr", "deprecation", "summary", "description", "is_commutative", "is_aggregate", "is_stateful", "allows_uninitialized_input", "is_distributed_communication")
    class ArgDef(_message.Message):
        __slots__ = ("name", "description", "type", "type_attr", "number_attr", "type_list_attr", "handle_data", "is_ref", "experimental_full_type")
        NAME_FIELD_NUMBER: _ClassVar[int]
        DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        TYPE_ATTR_FIELD_NUMBER: _ClassVar[int]
        NUMBER_ATTR_FIELD_NUMBER: _ClassVar[int]
        TYPE_LIST_ATTR_FIELD_NUMBER: _ClassVar[int]
        HANDLE_DATA_FIELD_NUMBER: _ClassVar[int]
        IS_REF_FIELD_NUMBER: _ClassVar[int]
        EXPERIMENTAL_FULL_TYPE_FIELD_NUMBER: _ClassVar[int]
        name: str
        description: str
        type: DataType
        type_attr: str
        number_attr: str
        type_list_attr: str
        handle_data: _containers.RepeatedCompositeFieldContainer[ResourceHandleProto.DtypeAndShape]
        is_ref: bool
        experimental_full_type: FullTypeDef
        def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., type: _Optional[_Union[DataType, str]] = ..., type_attr: _Optional[str] = ..., number_attr: _Optional[str] = ..., type_list_attr: _Optional[str] = ..., handle_data: _Optional[_Iterable[_Union[ResourceHandleProto.DtypeAndShape, _Mapping]]] = ..., is_ref: _Optional[bool] = ..., experimental_full_type: _Optional[_Union[FullTypeDef, _Mapping]] = ...) -> None: ...
    class AttrDef(_message.Message):
        __slots__ = ("name", "type", "default_value", "description", "has_minimum", "minimum", "allowed_values")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
        DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
        HAS_MINIMUM_FIELD_NUMBER: _ClassVar[int]
        MINIMUM_FIELD_NUMBER: _ClassVar[int]
        ALLOWED_VALUES_FIELD_NUMBER: _ClassVar[int]
        name: str
        type: str
        default_value: AttrValue
        description: str
        has_minimum: bool
        minimum: int
        allowed_values: AttrValue
        def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., default_value: _Optional[_Union[AttrValue, _Mapping]] = ..., description: _Optional[str] = ..., has_minimum: _Optional[bool] = ..., minimum: _Optional[int] = ..., allowed_values: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_ARG_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_ARG_FIELD_NUMBER: _ClassVar[int]
    CONTROL_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    DEPRECATION_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    IS_COMMUTATIVE_FIELD_NUMBER: _ClassVar[int]
    IS_AGGREGATE_FIELD_NUMBER: _ClassVar[int]
    IS_STATEFUL_FIELD_NUMBER: _ClassVar[int]
    ALLOWS_UNINITIALIZED_INPUT_FIELD_NUMBER: _ClassVar[int]
    IS_DISTRIBUTED_COMMUNICATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    input_arg: _containers.RepeatedCompositeFieldContainer[OpDef.ArgDef]
    output_arg: _containers.RepeatedCompositeFieldContainer[OpDef.ArgDef]
    control_output: _containers.RepeatedScalarFieldContainer[str]
    attr: _containers.RepeatedCompositeFieldContainer[OpDef.AttrDef]
    deprecation: OpDeprecation
    summary: str
    description: str
    is_commutative: bool
    is_aggregate: bool
    is_stateful: bool
    allows_uninitialized_input: bool
    is_distributed_communication: bool
    def __init__(self, name: _Optional[str] = ..., input_arg: _Optional[_Iterable[_Union[OpDef.ArgDef, _Mapping]]] = ..., output_arg: _Optional[_Iterable[_Union[OpDef.ArgDef, _Mapping]]] = ..., control_output: _Optional[_Iterable[str]] = ..., attr: _Optional[_Iterable[_Union[OpDef.AttrDef, _Mapping]]] = ..., deprecation: _Optional[_Union[OpDeprecation, _Mapping]] = ..., summary: _Optional[str] = ..., description: _Optional[str] = ..., is_commutative: _Optional[bool] = ..., is_aggregate: _Optional[bool] = ..., is_stateful: _Optional[bool] = ..., allows_uninitialized_input: _Optional[bool] = ..., is_distributed_communication: _Optional[bool] = ...) -> None: ...

class OpDeprecation(_message.Message):
    __slots__ = ("version", "explanation")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    version: int
    explanation: str
    def __init__(self, version: _Optional[int] = ..., explanation: _Optional[str] = ...) -> None: ...

class OpList(_message.Message):
    __slots__ = ("op",)
    OP_FIELD_NUMBER: _ClassVar[int]
    op: _containers.RepeatedCompositeFieldContainer[OpDef]
    def __init__(self, op: _Optional[_Iterable[_Union[OpDef, _Mapping]]] = ...) -> None: ...

class FunctionDefLibrary(_message.Message):
    __slots__ = ("function", "gradient", "registered_gradients")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    GRADIENT_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_GRADIENTS_FIELD_NUMBER: _ClassVar[int]
    function: _containers.RepeatedCompositeFieldContainer[FunctionDef]
    gradient: _containers.RepeatedCompositeFieldContainer[GradientDef]
    registered_gradients: _containers.RepeatedCompositeFieldContainer[RegisteredGradient]
    def __init__(self, function: _Optional[_Iterable[_Union[FunctionDef, _Mapping]]] = ..., gradient: _Optional[_Iterable[_Union[GradientDef, _Mapping]]] = ..., registered_gradients: _Optional[_Iterable[_Union[RegisteredGradient, _Mapping]]] = ...) -> None: ...

class FunctionDef(_message.Message):
    __slots__ = ("signature", "attr", "arg_attr", "resource_arg_unique_id", "node_def", "ret", "control_ret")
    class ArgAttrs(_message.Message):
        __slots__ = ("attr",)
        class AttrEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: AttrValue
            def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
        ATTR_FIELD_NUMBER: _ClassVar[int]
        attr: _containers.MessageMap[str, AttrValue]
        def __init__(self, attr: _Optional[_Mapping[str, AttrValue]] = ...) -> None: ...
    class AttrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AttrValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    class ArgAttrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: FunctionDef.ArgAttrs
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[FunctionDef.ArgAttrs, _Mapping]] = ...) -> None: ...
    class ResourceArgUniqueIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    class RetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ControlRetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    ARG_ATTR_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ARG_UNIQUE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_DEF_FIELD_NUMBER: _ClassVar[int]
    RET_FIELD_NUMBER: _ClassVar[int]
    CONTROL_RET_FIELD_NUMBER: _ClassVar[int]
    signature: OpDef
    attr: _containers.MessageMap[str, AttrValue]
    arg_attr: _containers.MessageMap[int, FunctionDef.ArgAttrs]
    resource_arg_unique_id: _containers.ScalarMap[int, int]
    node_def: _containers.RepeatedCompositeFieldContainer[NodeDef]
    ret: _containers.ScalarMap[str, str]
    control_ret: _containers.ScalarMap[str, str]
    def __init__(self, signature: _Optional[_Union[OpDef, _Mapping]] = ..., attr: _Optional[_Mapping[str, AttrValue]] = ..., arg_attr: _Optional[_Mapping[int, FunctionDef.ArgAttrs]] = ..., resource_arg_unique_id: _Optional[_Mapping[int, int]] = ..., node_def: _Optional[_Iterable[_Union[NodeDef, _Mapping]]] = ..., ret: _Optional[_Mapping[str, str]] = ..., control_ret: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GradientDef(_message.Message):
    __slots__ = ("function_name", "gradient_func")
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    GRADIENT_FUNC_FIELD_NUMBER: _ClassVar[int]
    function_name: str
    gradient_func: str
    def __init__(self, function_name: _Optional[str] = ..., gradient_func: _Optional[str] = ...) -> None: ...

class RegisteredGradient(_message.Message):
    __slots__ = ("gradient_func", "registered_op_type")
    GRADIENT_FUNC_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    gradient_func: str
    registered_op_type: str
    def __init__(self, gradient_func: _Optional[str] = ..., registered_op_type: _Optional[str] = ...) -> None: ...

class VersionDef(_message.Message):
    __slots__ = ("producer", "min_consumer", "bad_consumers")
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    MIN_CONSUMER_FIELD_NUMBER: _ClassVar[int]
    BAD_CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    producer: int
    min_consumer: int
    bad_consumers: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, producer: _Optional[int] = ..., min_consumer: _Optional[int] = ..., bad_consumers: _Optional[_Iterable[int]] = ...) -> None: ...

class GraphDebugInfo(_message.Message):
    __slots__ = ("files", "frames_by_id", "traces_by_id", "traces", "name_to_trace_id")
    class FileLineCol(_message.Message):
        __slots__ = ("file_index", "line", "col", "func", "code")
        FILE_INDEX_FIELD_NUMBER: _ClassVar[int]
        LINE_FIELD_NUMBER: _ClassVar[int]
        COL_FIELD_NUMBER: _ClassVar[int]
        FUNC_FIELD_NUMBER: _ClassVar[int]
        CODE_FIELD_NUMBER: _ClassVar[int]
        file_index: int
        line: int
        col: int
        func: str
        code: str
        def __init__(self, file_index: _Optional[int] = ..., line: _Optional[int] = ..., col: _Optional[int] = ..., func: _Optional[str] = ..., code: _Optional[str] = ...) -> None: ...
    class StackTrace(_message.Message):
        __slots__ = ("file_line_cols", "frame_id")
        FILE_LINE_COLS_FIELD_NUMBER: _ClassVar[int]
        FRAME_ID_FIELD_NUMBER: _ClassVar[int]
        file_line_cols: _containers.RepeatedCompositeFieldContainer[GraphDebugInfo.FileLineCol]
        frame_id: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, file_line_cols: _Optional[_Iterable[_Union[GraphDebugInfo.FileLineCol, _Mapping]]] = ..., frame_id: _Optional[_Iterable[int]] = ...) -> None: ...
    class FramesByIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: GraphDebugInfo.FileLineCol
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[GraphDebugInfo.FileLineCol, _Mapping]] = ...) -> None: ...
    class TracesByIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: GraphDebugInfo.StackTrace
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[GraphDebugInfo.StackTrace, _Mapping]] = ...) -> None: ...
    class TracesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: GraphDebugInfo.StackTrace
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[GraphDebugInfo.StackTrace, _Mapping]] = ...) -> None: ...
    class NameToTraceIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    FILES_FIELD_NUMBER: _ClassVar[int]
    FRAMES_BY_ID_FIELD_NUMBER: _ClassVar[int]
    TRACES_BY_ID_FIELD_NUMBER: _ClassVar[int]
    TRACES_FIELD_NUMBER: _ClassVar[int]
    NAME_TO_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedScalarFieldContainer[str]
    frames_by_id: _containers.MessageMap[int, GraphDebugInfo.FileLineCol]
    traces_by_id: _containers.MessageMap[int, GraphDebugInfo.StackTrace]
    traces: _containers.MessageMap[str, GraphDebugInfo.StackTrace]
    name_to_trace_id: _containers.ScalarMap[str, int]
    def __init__(self, files: _Optional[_Iterable[str]] = ..., frames_by_id: _Optional[_Mapping[int, GraphDebugInfo.FileLineCol]] = ..., traces_by_id: _Optional[_Mapping[int, GraphDebugInfo.StackTrace]] = ..., traces: _Optional[_Mapping[str, GraphDebugInfo.StackTrace]] = ..., name_to_trace_id: _Optional[_Mapping[str, int]] = ...) -> None: ...

class GraphDef(_message.Message):
    __slots__ = ("node", "versions", "version", "library", "debug_info")
    NODE_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LIBRARY_FIELD_NUMBER: _ClassVar[int]
    DEBUG_INFO_FIELD_NUMBER: _ClassVar[int]
    node: _containers.RepeatedCompositeFieldContainer[NodeDef]
    versions: VersionDef
    version: int
    library: FunctionDefLibrary
    debug_info: GraphDebugInfo
    def __init__(self, node: _Optional[_Iterable[_Union[NodeDef, _Mapping]]] = ..., versions: _Optional[_Union[VersionDef, _Mapping]] = ..., version: _Optional[int] = ..., library: _Optional[_Union[FunctionDefLibrary, _Mapping]] = ..., debug_info: _Optional[_Union[GraphDebugInfo, _Mapping]] = ...) -> None: ...

class SavedModel(_message.Message):
    __slots__ = ("saved_model_schema_version", "meta_graphs")
    SAVED_MODEL_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    META_GRAPHS_FIELD_NUMBER: _ClassVar[int]
    saved_model_schema_version: int
    meta_graphs: _containers.RepeatedCompositeFieldContainer[MetaGraphDef]
    def __init__(self, saved_model_schema_version: _Optional[int] = ..., meta_graphs: _Optional[_Iterable[_Union[MetaGraphDef, _Mapping]]] = ...) -> None: ...

class MetaGraphDef(_message.Message):
    __slots__ = ("meta_info_def", "graph_def", "saver_def", "collection_def", "signature_def", "asset_file_def", "object_graph_def")
    class MetaInfoDef(_message.Message):
        __slots__ = ("meta_graph_version", "stripped_op_list", "any_info", "tags", "tensorflow_version", "tensorflow_git_version", "stripped_default_attrs", "function_aliases")
        class FunctionAliasesEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        META_GRAPH_VERSION_FIELD_NUMBER: _ClassVar[int]
        STRIPPED_OP_LIST_FIELD_NUMBER: _ClassVar[int]
        ANY_INFO_FIELD_NUMBER: _ClassVar[int]
        TAGS_FIELD_NUMBER: _ClassVar[int]
        TENSORFLOW_VERSION_FIELD_NUMBER: _ClassVar[int]
        TENSORFLOW_GIT_VERSION_FIELD_NUMBER: _ClassVar[int]
        STRIPPED_DEFAULT_ATTRS_FIELD_NUMBER: _ClassVar[int]
        FUNCTION_ALIASES_FIELD_NUMBER: _ClassVar[int]
        meta_graph_version: str
        stripped_op_list: OpList
        any_info: _any_pb2.Any
        tags: _containers.RepeatedScalarFieldContainer[str]
        tensorflow_version: str
        tensorflow_git_version: str
        stripped_default_attrs: bool
        function_aliases: _containers.ScalarMap[str, str]
        def __init__(self, meta_graph_version: _Optional[str] = ..., stripped_op_list: _Optional[_Union[OpList, _Mapping]] = ..., any_info: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., tags: _Optional[_Iterable[str]] = ..., tensorflow_version: _Optional[str] = ..., tensorflow_git_version: _Optional[str] = ..., stripped_default_attrs: _Optional[bool] = ..., function_aliases: _Optional[_Mapping[str, str]] = ...) -> None: ...
    class CollectionDefEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CollectionDef
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CollectionDef, _Mapping]] = ...) -> None: ...
    class SignatureDefEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SignatureDef
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SignatureDef, _Mapping]] = ...) -> None: ...
    META_INFO_DEF_FIELD_NUMBER: _ClassVar[int]
    GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    SAVER_DEF_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_DEF_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_DEF_FIELD_NUMBER: _ClassVar[int]
    ASSET_FILE_DEF_FIELD_NUMBER: _ClassVar[int]
    OBJECT_GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    meta_info_def: MetaGraphDef.MetaInfoDef
    graph_def: GraphDef
    saver_def: SaverDef
    collection_def: _containers.MessageMap[str, CollectionDef]
    signature_def: _containers.MessageMap[str, SignatureDef]
    asset_file_def: _containers.RepeatedCompositeFieldContainer[AssetFileDef]
    object_graph_def: SavedObjectGraph
    def __init__(self, meta_info_def: _Optional[_Union[MetaGraphDef.MetaInfoDef, _Mapping]] = ..., graph_def: _Optional[_Union[GraphDef, _Mapping]] = ..., saver_def: _Optional[_Union[SaverDef, _Mapping]] = ..., collection_def: _Optional[_Mapping[str, CollectionDef]] = ..., signature_def: _Optional[_Mapping[str, SignatureDef]] = ..., asset_file_def: _Optional[_Iterable[_Union[AssetFileDef, _Mapping]]] = ..., object_graph_def: _Optional[_Union[SavedObjectGraph, _Mapping]] = ...) -> None: ...

class CollectionDef(_message.Message):
    __slots__ = ("node_list", "bytes_list", "int64_list", "float_list", "any_list")
    class NodeList(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, value: _Optional[_Iterable[str]] = ...) -> None: ...
    class BytesList(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedScalarFieldContainer[bytes]
        def __init__(self, value: _Optional[_Iterable[bytes]] = ...) -> None: ...
    class Int64List(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, value: _Optional[_Iterable[int]] = ...) -> None: ...
    class FloatList(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedScalarFieldContainer[float]
        def __init__(self, value: _Optional[_Iterable[float]] = ...) -> None: ...
    class AnyList(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
        def __init__(self, value: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ...) -> None: ...
    NODE_LIST_FIELD_NUMBER: _ClassVar[int]
    BYTES_LIST_FIELD_NUMBER: _ClassVar[int]
    INT64_LIST_FIELD_NUMBER: _ClassVar[int]
    FLOAT_LIST_FIELD_NUMBER: _ClassVar[int]
    ANY_LIST_FIELD_NUMBER: _ClassVar[int]
    node_list: CollectionDef.NodeList
    bytes_list: CollectionDef.BytesList
    int64_list: CollectionDef.Int64List
    float_list: CollectionDef.FloatList
    any_list: CollectionDef.AnyList
    def __init__(self, node_list: _Optional[_Union[CollectionDef.NodeList, _Mapping]] = ..., bytes_list: _Optional[_Union[CollectionDef.BytesList, _Mapping]] = ..., int64_list: _Optional[_Union[CollectionDef.Int64List, _Mapping]] = ..., float_list: _Optional[_Union[CollectionDef.FloatList, _Mapping]] = ..., any_list: _Optional[_Union[CollectionDef.AnyList, _Mapping]] = ...) -> None: ...

class TensorInfo(_message.Message):
    __slots__ = ("name", "coo_sparse", "composite_tensor", "dtype", "tensor_shape")
    class CooSparse(_message.Message):
        __slots__ = ("values_tensor_name", "indices_tensor_name", "dense_shape_tensor_name")
        VALUES_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
        INDICES_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
        DENSE_SHAPE_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
        values_tensor_name: str
        indices_tensor_name: str
        dense_shape_tensor_name: str
        def __init__(self, values_tensor_name: _Optional[str] = ..., indices_tensor_name: _Optional[str] = ..., dense_shape_tensor_name: _Optional[str] = ...) -> None: ...
    class CompositeTensor(_message.Message):
        __slots__ = ("type_spec", "components")
        TYPE_SPEC_FIELD_NUMBER: _ClassVar[int]
        COMPONENTS_FIELD_NUMBER: _ClassVar[int]
        type_spec: TypeSpecProto
        components: _containers.RepeatedCompositeFieldContainer[TensorInfo]
        def __init__(self, type_spec: _Optional[_Union[TypeSpecProto, _Mapping]] = ..., components: _Optional[_Iterable[_Union[TensorInfo, _Mapping]]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COO_SPARSE_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_TENSOR_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SHAPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    coo_sparse: TensorInfo.CooSparse
    composite_tensor: TensorInfo.CompositeTensor
    dtype: DataType
    tensor_shape: TensorShapeProto
    def __init__(self, name: _Optional[str] = ..., coo_sparse: _Optional[_Union[TensorInfo.CooSparse, _Mapping]] = ..., composite_tensor: _Optional[_Union[TensorInfo.CompositeTensor, _Mapping]] = ..., dtype: _Optional[_Union[DataType, str]] = ..., tensor_shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ...) -> None: ...

class SignatureDef(_message.Message):
    __slots__ = ("inputs", "outputs", "method_name", "defaults")
    class InputsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TensorInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TensorInfo, _Mapping]] = ...) -> None: ...
    class OutputsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TensorInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TensorInfo, _Mapping]] = ...) -> None: ...
    class DefaultsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TensorProto
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TensorProto, _Mapping]] = ...) -> None: ...
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    METHOD_NAME_FIELD_NUMBER: _ClassVar[int]
    DEFAULTS_FIELD_NUMBER: _ClassVar[int]
    inputs: _containers.MessageMap[str, TensorInfo]
    outputs: _containers.MessageMap[str, TensorInfo]
    method_name: str
    defaults: _containers.MessageMap[str, TensorProto]
    def __init__(self, inputs: _Optional[_Mapping[str, TensorInfo]] = ..., outputs: _Optional[_Mapping[str, TensorInfo]] = ..., method_name: _Optional[str] = ..., defaults: _Optional[_Mapping[str, TensorProto]] = ...) -> None: ...

class AssetFileDef(_message.Message):
    __slots__ = ("tensor_info", "filename")
    TENSOR_INFO_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    tensor_info: TensorInfo
    filename: str
    def __init__(self, tensor_info: _Optional[_Union[TensorInfo, _Mapping]] = ..., filename: _Optional[str] = ...) -> None: ...

class SaverDef(_message.Message):
    __slots__ = ("filename_tensor_name", "save_tensor_name", "restore_op_name", "max_to_keep", "sharded", "keep_checkpoint_every_n_hours", "version")
    class CheckpointFormatVersion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        LEGACY: _ClassVar[SaverDef.CheckpointFormatVersion]
        V1: _ClassVar[SaverDef.CheckpointFormatVersion]
        V2: _ClassVar[SaverDef.CheckpointFormatVersion]
    LEGACY: SaverDef.CheckpointFormatVersion
    V1: SaverDef.CheckpointFormatVersion
    V2: SaverDef.CheckpointFormatVersion
    FILENAME_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
    SAVE_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
    RESTORE_OP_NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_TO_KEEP_FIELD_NUMBER: _ClassVar[int]
    SHARDED_FIELD_NUMBER: _ClassVar[int]
    KEEP_CHECKPOINT_EVERY_N_HOURS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    filename_tensor_name: str
    save_tensor_name: str
    restore_op_name: str
    max_to_keep: int
    sharded: bool
    keep_checkpoint_every_n_hours: float
    version: SaverDef.CheckpointFormatVersion
    def __init__(self, filename_tensor_name: _Optional[str] = ..., save_tensor_name: _Optional[str] = ..., restore_op_name: _Optional[str] = ..., max_to_keep: _Optional[int] = ..., sharded: _Optional[bool] = ..., keep_checkpoint_every_n_hours: _Optional[float] = ..., version: _Optional[_Union[SaverDef.CheckpointFormatVersion, str]] = ...) -> None: ...

class SavedObjectGraph(_message.Message):
    __slots__ = ("nodes", "concrete_functions")
    class ConcreteFunctionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SavedConcreteFunction
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SavedConcreteFunction, _Mapping]] = ...) -> None: ...
    NODES_FIELD_NUMBER: _ClassVar[int]
    CONCRETE_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[SavedObject]
    concrete_functions: _containers.MessageMap[str, SavedConcreteFunction]
    def __init__(self, nodes: _Optional[_Iterable[_Union[SavedObject, _Mapping]]] = ..., concrete_functions: _Optional[_Mapping[str, SavedConcreteFunction]] = ...) -> None: ...

class SavedObject(_message.Message):
    __slots__ = ("children", "dependencies", "slot_variables", "user_object", "asset", "function", "variable", "bare_concrete_function", "constant", "resource", "captured_tensor", "saveable_objects", "registered_name", "serialized_user_proto", "registered_saver")
    class SaveableObjectsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SaveableObject
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SaveableObject, _Mapping]] = ...) -> None: ...
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    SLOT_VARIABLES_FIELD_NUMBER: _ClassVar[int]
    USER_OBJECT_FIELD_NUMBER: _ClassVar[int]
    ASSET_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    VARIABLE_FIELD_NUMBER: _ClassVar[int]
    BARE_CONCRETE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    CONSTANT_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    CAPTURED_TENSOR_FIELD_NUMBER: _ClassVar[int]
    SAVEABLE_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_NAME_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_USER_PROTO_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_SAVER_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[TrackableObjectGraph.TrackableObject.ObjectReference]
    dependencies: _containers.RepeatedCompositeFieldContainer[TrackableObjectGraph.TrackableObject.ObjectReference]
    slot_variables: _containers.RepeatedCompositeFieldContainer[TrackableObjectGraph.TrackableObject.SlotVariableReference]
    user_object: SavedUserObject
    asset: SavedAsset
    function: SavedFunction
    variable: SavedVariable
    bare_concrete_function: SavedBareConcreteFunction
    constant: SavedConstant
    resource: SavedResource
    captured_tensor: CapturedTensor
    saveable_objects: _containers.MessageMap[str, SaveableObject]
    registered_name: str
    serialized_user_proto: _any_pb2.Any
    registered_saver: str
    def __init__(self, children: _Optional[_Iterable[_Union[TrackableObjectGraph.TrackableObject.ObjectReference, _Mapping]]] = ..., dependencies: _Optional[_Iterable[_Union[TrackableObjectGraph.TrackableObject.ObjectReference, _Mapping]]] = ..., slot_variables: _Optional[_Iterable[_Union[TrackableObjectGraph.TrackableObject.SlotVariableReference, _Mapping]]] = ..., user_object: _Optional[_Union[SavedUserObject, _Mapping]] = ..., asset: _Optional[_Union[SavedAsset, _Mapping]] = ..., function: _Optional[_Union[SavedFunction, _Mapping]] = ..., variable: _Optional[_Union[SavedVariable, _Mapping]] = ..., bare_concrete_function: _Optional[_Union[SavedBareConcreteFunction, _Mapping]] = ..., constant: _Optional[_Union[SavedConstant, _Mapping]] = ..., resource: _Optional[_Union[SavedResource, _Mapping]] = ..., captured_tensor: _Optional[_Union[CapturedTensor, _Mapping]] = ..., saveable_objects: _Optional[_Mapping[str, SaveableObject]] = ..., registered_name: _Optional[str] = ..., serialized_user_proto: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., registered_saver: _Optional[str] = ...) -> None: ...

class SavedUserObject(_message.Message):
    __slots__ = ("identifier", "version", "metadata")
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    identifier: str
    version: VersionDef
    metadata: str
    def __init__(self, identifier: _Optional[str] = ..., version: _Optional[_Union[VersionDef, _Mapping]] = ..., metadata: _Optional[str] = ...) -> None: ...

class SavedAsset(_message.Message):
    __slots__ = ("asset_file_def_index",)
    ASSET_FILE_DEF_INDEX_FIELD_NUMBER: _ClassVar[int]
    asset_file_def_index: int
    def __init__(self, asset_file_def_index: _Optional[int] = ...) -> None: ...

class SavedFunction(_message.Message):
    __slots__ = ("concrete_functions", "function_spec")
    CONCRETE_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_SPEC_FIELD_NUMBER: _ClassVar[int]
    concrete_functions: _containers.RepeatedScalarFieldContainer[str]
    function_spec: FunctionSpec
    def __init__(self, concrete_functions: _Optional[_Iterable[str]] = ..., function_spec: _Optional[_Union[FunctionSpec, _Mapping]] = ...) -> None: ...

class CapturedTensor(_message.Message):
    __slots__ = ("name", "concrete_function")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONCRETE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    concrete_function: str
    def __init__(self, name: _Optional[str] = ..., concrete_function: _Optional[str] = ...) -> None: ...

class SavedConcreteFunction(_message.Message):
    __slots__ = ("bound_inputs", "canonicalized_input_signature", "output_signature")
    BOUND_INPUTS_FIELD_NUMBER: _ClassVar[int]
    CANONICALIZED_INPUT_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    bound_inputs: _containers.RepeatedScalarFieldContainer[int]
    canonicalized_input_signature: StructuredValue
    output_signature: StructuredValue
    def __init__(self, bound_inputs: _Optional[_Iterable[int]] = ..., canonicalized_input_signature: _Optional[_Union[StructuredValue, _Mapping]] = ..., output_signature: _Optional[_Union[StructuredValue, _Mapping]] = ...) -> None: ...

class SavedBareConcreteFunction(_message.Message):
    __slots__ = ("concrete_function_name", "argument_keywords", "allowed_positional_arguments", "function_spec")
    CONCRETE_FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENT_KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_POSITIONAL_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_SPEC_FIELD_NUMBER: _ClassVar[int]
    concrete_function_name: str
    argument_keywords: _containers.RepeatedScalarFieldContainer[str]
    allowed_positional_arguments: int
    function_spec: FunctionSpec
    def __init__(self, concrete_function_name: _Optional[str] = ..., argument_keywords: _Optional[_Iterable[str]] = ..., allowed_positional_arguments: _Optional[int] = ..., function_spec: _Optional[_Union[FunctionSpec, _Mapping]] = ...) -> None: ...

class SavedConstant(_message.Message):
    __slots__ = ("operation",)
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    operation: str
    def __init__(self, operation: _Optional[str] = ...) -> None: ...

class SavedVariable(_message.Message):
    __slots__ = ("dtype", "shape", "trainable", "synchronization", "aggregation", "name", "device", "experimental_distributed_variable_components")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    TRAINABLE_FIELD_NUMBER: _ClassVar[int]
    SYNCHRONIZATION_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENTAL_DISTRIBUTED_VARIABLE_COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    dtype: DataType
    shape: TensorShapeProto
    trainable: bool
    synchronization: VariableSynchronization
    aggregation: VariableAggregation
    name: str
    device: str
    experimental_distributed_variable_components: _containers.RepeatedCompositeFieldContainer[SavedVariable]
    def __init__(self, dtype: _Optional[_Union[DataType, str]] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., trainable: _Optional[bool] = ..., synchronization: _Optional[_Union[VariableSynchronization, str]] = ..., aggregation: _Optional[_Union[VariableAggregation, str]] = ..., name: _Optional[str] = ..., device: _Optional[str] = ..., experimental_distributed_variable_components: _Optional[_Iterable[_Union[SavedVariable, _Mapping]]] = ...) -> None: ...

class FunctionSpec(_message.Message):
    __slots__ = ("fullargspec", "is_method", "input_signature", "jit_compile")
    class JitCompile(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DEFAULT: _ClassVar[FunctionSpec.JitCompile]
        ON: _ClassVar[FunctionSpec.JitCompile]
        OFF: _ClassVar[FunctionSpec.JitCompile]
    DEFAULT: FunctionSpec.JitCompile
    ON: FunctionSpec.JitCompile
    OFF: FunctionSpec.JitCompile
    FULLARGSPEC_FIELD_NUMBER: _ClassVar[int]
    IS_METHOD_FIELD_NUMBER: _ClassVar[int]
    INPUT_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    JIT_COMPILE_FIELD_NUMBER: _ClassVar[int]
    fullargspec: StructuredValue
    is_method: bool
    input_signature: StructuredValue
    jit_compile: FunctionSpec.JitCompile
    def __init__(self, fullargspec: _Optional[_Union[StructuredValue, _Mapping]] = ..., is_method: _Optional[bool] = ..., input_signature: _Optional[_Union[StructuredValue, _Mapping]] = ..., jit_compile: _Optional[_Union[FunctionSpec.JitCompile, str]] = ...) -> None: ...

class SavedResource(_message.Message):
    __slots__ = ("device",)
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    device: str
    def __init__(self, device: _Optional[str] = ...) -> None: ...

class SaveableObject(_message.Message):
    __slots__ = ("save_function", "restore_function")
    SAVE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    save_function: int
    restore_function: int
    def __init__(self, save_function: _Optional[int] = ..., restore_function: _Optional[int] = ...) -> None: ...

class TrackableObjectGraph(_message.Message):
    __slots__ = ("nodes",)
    class TrackableObject(_message.Message):
        __slots__ = ("children", "attributes", "slot_variables", "registered_saver", "has_checkpoint_values")
        class ObjectReference(_message.Message):
            __slots__ = ("node_id", "local_name")
            NODE_ID_FIELD_NUMBER: _ClassVar[int]
            LOCAL_NAME_FIELD_NUMBER: _ClassVar[int]
            node_id: int
            local_name: str
            def __init__(self, node_id: _Optional[int] = ..., local_name: _Optional[str] = ...) -> None: ...
        class SerializedTensor(_message.Message):
            __slots__ = ("name", "full_name", "checkpoint_key")
            NAME_FIELD_NUMBER: _ClassVar[int]
            FULL_NAME_FIELD_NUMBER: _ClassVar[int]
            CHECKPOINT_KEY_FIELD_NUMBER: _ClassVar[int]
            name: str
            full_name: str
            checkpoint_key: str
            def __init__(self, name: _Optional[str] = ..., full_name: _Optional[str] = ..., checkpoint_key: _Optional[str] = ...) -> None: ...
        class SlotVariableReference(_message.Message):
            __slots__ = ("original_variable_node_id", "slot_name", "slot_variable_node_id")
            ORIGINAL_VARIABLE_NODE_ID_FIELD_NUMBER: _ClassVar[int]
            SLOT_NAME_FIELD_NUMBER: _ClassVar[int]
            SLOT_VARIABLE_NODE_ID_FIELD_NUMBER: _ClassVar[int]
            original_variable_node_id: int
            slot_name: str
            slot_variable_node_id: int
            def __init__(self, original_variable_node_id: _Optional[int] = ..., slot_name: _Optional[str] = ..., slot_variable_node_id: _Optional[int] = ...) -> None: ...
        CHILDREN_FIELD_NUMBER: _ClassVar[int]
        ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
        SLOT_VARIABLES_FIELD_NUMBER: _ClassVar[int]
        REGISTERED_SAVER_FIELD_NUMBER: _ClassVar[int]
        HAS_CHECKPOINT_VALUES_FIELD_NUMBER: _ClassVar[int]
        children: _containers.RepeatedCompositeFieldContainer[TrackableObjectGraph.TrackableObject.ObjectReference]
        attributes: _containers.RepeatedCompositeFieldContainer[TrackableObjectGraph.TrackableObject.SerializedTensor]
        slot_variables: _containers.RepeatedCompositeFieldContainer[TrackableObjectGraph.TrackableObject.SlotVariableReference]
        registered_saver: RegisteredSaver
        has_checkpoint_values: _wrappers_pb2.BoolValue
        def __init__(self, children: _Optional[_Iterable[_Union[TrackableObjectGraph.TrackableObject.ObjectReference, _Mapping]]] = ..., attributes: _Optional[_Iterable[_Union[TrackableObjectGraph.TrackableObject.SerializedTensor, _Mapping]]] = ..., slot_variables: _Optional[_Iterable[_Union[TrackableObjectGraph.TrackableObject.SlotVariableReference, _Mapping]]] = ..., registered_saver: _Optional[_Union[RegisteredSaver, _Mapping]] = ..., has_checkpoint_values: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ...) -> None: ...
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[TrackableObjectGraph.TrackableObject]
    def __init__(self, nodes: _Optional[_Iterable[_Union[TrackableObjectGraph.TrackableObject, _Mapping]]] = ...) -> None: ...

class RegisteredSaver(_message.Message):
    __slots__ = ("name", "object_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OBJECT_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    object_name: str
    def __init__(self, name: _Optional[str] = ..., object_name: _Optional[str] = ...) -> None: ...

class StructuredValue(_message.Message):
    __slots__ = ("none_value", "float64_value", "int64_value", "string_value", "bool_value", "tensor_shape_value", "tensor_dtype_value", "tensor_spec_value", "type_spec_value", "bounded_tensor_spec_value", "list_value", "tuple_value", "dict_value", "named_tuple_value", "tensor_value", "numpy_value")
    NONE_VALUE_FIELD_NUMBER: _ClassVar[int]
    FLOAT64_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT64_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SHAPE_VALUE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_DTYPE_VALUE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SPEC_VALUE_FIELD_NUMBER: _ClassVar[int]
    TYPE_SPEC_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOUNDED_TENSOR_SPEC_VALUE_FIELD_NUMBER: _ClassVar[int]
    LIST_VALUE_FIELD_NUMBER: _ClassVar[int]
    TUPLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    DICT_VALUE_FIELD_NUMBER: _ClassVar[int]
    NAMED_TUPLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_VALUE_FIELD_NUMBER: _ClassVar[int]
    NUMPY_VALUE_FIELD_NUMBER: _ClassVar[int]
    none_value: NoneValue
    float64_value: float
    int64_value: int
    string_value: str
    bool_value: bool
    tensor_shape_value: TensorShapeProto
    tensor_dtype_value: DataType
    tensor_spec_value: TensorSpecProto
    type_spec_value: TypeSpecProto
    bounded_tensor_spec_value: BoundedTensorSpecProto
    list_value: ListValue
    tuple_value: TupleValue
    dict_value: DictValue
    named_tuple_value: NamedTupleValue
    tensor_value: TensorProto
    numpy_value: TensorProto
    def __init__(self, none_value: _Optional[_Union[NoneValue, _Mapping]] = ..., float64_value: _Optional[float] = ..., int64_value: _Optional[int] = ..., string_value: _Optional[str] = ..., bool_value: _Optional[bool] = ..., tensor_shape_value: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., tensor_dtype_value: _Optional[_Union[DataType, str]] = ..., tensor_spec_value: _Optional[_Union[TensorSpecProto, _Mapping]] = ..., type_spec_value: _Optional[_Union[TypeSpecProto, _Mapping]] = ..., bounded_tensor_spec_value: _Optional[_Union[BoundedTensorSpecProto, _Mapping]] = ..., list_value: _Optional[_Union[ListValue, _Mapping]] = ..., tuple_value: _Optional[_Union[TupleValue, _Mapping]] = ..., dict_value: _Optional[_Union[DictValue, _Mapping]] = ..., named_tuple_value: _Optional[_Union[NamedTupleValue, _Mapping]] = ..., tensor_value: _Optional[_Union[TensorProto, _Mapping]] = ..., numpy_value: _Optional[_Union[TensorProto, _Mapping]] = ...) -> None: ...

class NoneValue(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListValue(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedCompositeFieldContainer[StructuredValue]
    def __init__(self, values: _Optional[_Iterable[_Union[StructuredValue, _Mapping]]] = ...) -> None: ...

class TupleValue(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedCompositeFieldContainer[StructuredValue]
    def __init__(self, values: _Optional[_Iterable[_Union[StructuredValue, _Mapping]]] = ...) -> None: ...

class DictValue(_message.Message):
    __slots__ = ("fields",)
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: StructuredValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[StructuredValue, _Mapping]] = ...) -> None: ...
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.MessageMap[str, StructuredValue]
    def __init__(self, fields: _Optional[_Mapping[str, StructuredValue]] = ...) -> None: ...

class PairValue(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: StructuredValue
    def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[StructuredValue, _Mapping]] = ...) -> None: ...

class NamedTupleValue(_message.Message):
    __slots__ = ("name", "values")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    name: str
    values: _containers.RepeatedCompositeFieldContainer[PairValue]
    def __init__(self, name: _Optional[str] = ..., values: _Optional[_Iterable[_Union[PairValue, _Mapping]]] = ...) -> None: ...

class TensorSpecProto(_message.Message):
    __slots__ = ("name", "shape", "dtype")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    shape: TensorShapeProto
    dtype: DataType
    def __init__(self, name: _Optional[str] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., dtype: _Optional[_Union[DataType, str]] = ...) -> None: ...

class BoundedTensorSpecProto(_message.Message):
    __slots__ = ("name", "shape", "dtype", "minimum", "maximum")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    name: str
    shape: TensorShapeProto
    dtype: DataType
    minimum: TensorProto
    maximum: TensorProto
    def __init__(self, name: _Optional[str] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., dtype: _Optional[_Union[DataType, str]] = ..., minimum: _Optional[_Union[TensorProto, _Mapping]] = ..., maximum: _Optional[_Union[TensorProto, _Mapping]] = ...) -> None: ...

class TypeSpecProto(_message.Message):
    __slots__ = ("type_spec_class", "type_state", "type_spec_class_name", "num_flat_components")
    class TypeSpecClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[TypeSpecProto.TypeSpecClass]
        SPARSE_TENSOR_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        INDEXED_SLICES_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        RAGGED_TENSOR_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        TENSOR_ARRAY_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        DATA_DATASET_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        DATA_ITERATOR_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        OPTIONAL_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        PER_REPLICA_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        VARIABLE_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        ROW_PARTITION_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        REGISTERED_TYPE_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
        EXTENSION_TYPE_SPEC: _ClassVar[TypeSpecProto.TypeSpecClass]
    UNKNOWN: TypeSpecProto.TypeSpecClass
    SPARSE_TENSOR_SPEC: TypeSpecProto.TypeSpecClass
    INDEXED_SLICES_SPEC: TypeSpecProto.TypeSpecClass
    RAGGED_TENSOR_SPEC: TypeSpecProto.TypeSpecClass
    TENSOR_ARRAY_SPEC: TypeSpecProto.TypeSpecClass
    DATA_DATASET_SPEC: TypeSpecProto.TypeSpecClass
    DATA_ITERATOR_SPEC: TypeSpecProto.TypeSpecClass
    OPTIONAL_SPEC: TypeSpecProto.TypeSpecClass
    PER_REPLICA_SPEC: TypeSpecProto.TypeSpecClass
    VARIABLE_SPEC: TypeSpecProto.TypeSpecClass
    ROW_PARTITION_SPEC: TypeSpecProto.TypeSpecClass
    REGISTERED_TYPE_SPEC: TypeSpecProto.TypeSpecClass
    EXTENSION_TYPE_SPEC: TypeSpecProto.TypeSpecClass
    TYPE_SPEC_CLASS_FIELD_NUMBER: _ClassVar[int]
    TYPE_STATE_FIELD_NUMBER: _ClassVar[int]
    TYPE_SPEC_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_FLAT_COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    type_spec_class: TypeSpecProto.TypeSpecClass
    type_state: StructuredValue
    type_spec_class_name: str
    num_flat_components: int
    def __init__(self, type_spec_class: _Optional[_Union[TypeSpecProto.TypeSpecClass, str]] = ..., type_state: _Optional[_Union[StructuredValue, _Mapping]] = ..., type_spec_class_name: _Optional[str] = ..., num_flat_components: _Optional[int] = ...) -> None: ...

class BundleHeaderProto(_message.Message):
    __slots__ = ("num_shards", "endianness", "version")
    class Endianness(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        LITTLE: _ClassVar[BundleHeaderProto.Endianness]
        BIG: _ClassVar[BundleHeaderProto.Endianness]
    LITTLE: BundleHeaderProto.Endianness
    BIG: BundleHeaderProto.Endianness
    NUM_SHARDS_FIELD_NUMBER: _ClassVar[int]
    ENDIANNESS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    num_shards: int
    endianness: BundleHeaderProto.Endianness
    version: VersionDef
    def __init__(self, num_shards: _Optional[int] = ..., endianness: _Optional[_Union[BundleHeaderProto.Endianness, str]] = ..., version: _Optional[_Union[VersionDef, _Mapping]] = ...) -> None: ...

class BundleEntryProto(_message.Message):
    __slots__ = ("dtype", "shape", "shard_id", "offset", "size", "crc32c", "slices")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    CRC32C_FIELD_NUMBER: _ClassVar[int]
    SLICES_FIELD_NUMBER: _ClassVar[int]
    dtype: DataType
    shape: TensorShapeProto
    shard_id: int
    offset: int
    size: int
    crc32c: int
    slices: _containers.RepeatedCompositeFieldContainer[TensorSliceProto]
    def __init__(self, dtype: _Optional[_Union[DataType, str]] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., shard_id: _Optional[int] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., crc32c: _Optional[int] = ..., slices: _Optional[_Iterable[_Union[TensorSliceProto, _Mapping]]] = ...) -> None: ...

class TensorSliceProto(_message.Message):
    __slots__ = ("extent",)
    class Extent(_message.Message):
        __slots__ = ("start", "length")
        START_FIELD_NUMBER: _ClassVar[int]
        LENGTH_FIELD_NUMBER: _ClassVar[int]
        start: int
        length: int
        def __init__(self, start: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...
    EXTENT_FIELD_NUMBER: _ClassVar[int]
    extent: _containers.RepeatedCompositeFieldContainer[TensorSliceProto.Extent]
    def __init__(self, extent: _Optional[_Iterable[_Union[TensorSliceProto.Extent, _Mapping]]] = ...) -> None: ...
