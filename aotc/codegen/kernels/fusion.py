"""The fused emitter: one loop nest per ``fusion`` instruction, values kept in registers.

The fused computation's instructions are composed into element generators (``elemental.py``),
the parameters being the fusion operands' generators; nothing in between is stored. The plan
recorded on the fusion (``FusionAttrs.plan``, made by ``aotc/hlo/fusion_plan.py``; never
re-derived here) says which loop structure to emit:

* kLoop, and kInput rooted at a reduce: one loop nest over the root's shape (a root reduce:
  the reduce kernel, its operand generated on the fly);
* kInput with rows: a loop over the kept dimensions ``K``; per row, each cached member (inner
  reduces and the elementwise ops on them) is computed once into a register, then the root's
  remaining dimensions are looped over, reading the cached values through the boundary
  broadcasts; a row member (softmax's exp) is stored into a row buffer on the stack by the
  first reduce loop that computes it and read back from there by the later loops;
* kOutput: the dot (or convolution) kernel's loops, with the elementwise epilogue applied to
  each accumulated element before the store; an f32 GEMM-shaped dot (or an NHWC convolution,
  ``conv.py``) runs on the GEMM engine with the epilogue
  evaluated on whole vectors in its tile store (``dot_gemm.py``, ``elemental_vector.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

from llvmlite import ir

from aotc.abi import ALIGN
from aotc.codegen.irtypes import I8, i64, linear_index, register_type, store_element
from aotc.codegen.kernels.attention import attention_scratch_bytes, emit_attention_kernel
from aotc.codegen.kernels.base import ElementGenerator, KernelIO, buffer_reader
from aotc.codegen.kernels.conv import (
    FastConv,
    conv_fast_path,
    emit_conv_fast_path,
    emit_conv_loops,
    packs_weights,
)
from aotc.codegen.kernels.conv_depthwise import depthwise_row_emitter
from aotc.codegen.kernels.conv_expand import expand_depthwise, expand_rows, ring_lines
from aotc.codegen.kernels.conv_rows import (
    SCALED_WEIGHTS_MAX,
    RowConv,
    emit_row_conv,
    row_emitter,
)
from aotc.codegen.kernels.dot import emit_dot_loops
from aotc.codegen.kernels.dot_gemm import (
    GemmCall,
    GemmDot,
    VectorEpilogue,
    emit_gemm_dot,
    gemm_dot,
    operand_reader,
    operand_vector_reader,
    single_pass_form,
)
from aotc.codegen.kernels.elemental import (
    emit_concat_store_loops,
    emit_store_loop,
    make_generator,
    reads_along_last,
)
from aotc.codegen.kernels.elemental_vector import Memo, VectorGenerator, vector_generators
from aotc.codegen.kernels.reduce import emit_reduce_kernel, fold_loop
from aotc.codegen.loops import entry_alloca, loop_nest
from aotc.codegen.vector import VectorInfo
from aotc.errors import CodegenError
from aotc.hlo.attention_plan import AttentionPlan
from aotc.hlo.fusion_plan import FusionPlan, recorded_plan
from aotc.hlo.ir import Computation, FusionKind, Instruction, Opcode, parameter_number
from aotc.hlo.opcodes import EXPENSIVE
from aotc.hlo.shape import PrimitiveType

Generators = dict[int, ElementGenerator]
Cells = dict[int, ir.Value]


def emit_fusion_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    """Emit the loops of a ``fusion`` instruction (see the module docstring)."""
    comp, plan = io.inst.called[0], _plan(io.inst)
    if plan.attention is not None:
        attention = plan.attention
        scores = _vector_map(io.inst, _buffers(io), attention.score_read, attention.scores)
        emit_attention_kernel(b, io, attention, scores)
    elif plan.kind is FusionKind.OUTPUT:
        dot = _contraction(plan)
        producer = _nested_producer(io.inst)
        if producer is not None:
            _emit_expand_fusion(b, io, comp, dot, producer)
        elif dot.opcode is Opcode.CONVOLUTION:
            _emit_conv_output_fusion(b, io, comp, dot)
        else:
            _emit_output_fusion(b, io, comp, dot)
    elif plan.cached:
        _emit_row_fusion(b, io, comp, plan)
    else:
        _emit_loop_fusion(b, io, comp)


def _plan(fusion: Instruction) -> FusionPlan:
    """The recorded plan; a fusion without one is one the fused emitter cannot compile."""
    plan = recorded_plan(fusion)
    if plan is None:
        comp = fusion.called[0].name
        raise CodegenError(f"fusion %{fusion.name} calls {comp}, which cannot be emitted")
    return plan


def _attention(fusion: Instruction) -> AttentionPlan | None:
    plan = recorded_plan(fusion)
    return plan.attention if plan is not None else None


def _contraction(plan: FusionPlan) -> Instruction:
    assert plan.dot is not None, "a kOutput plan names its dot or convolution"
    return plan.dot


def _generators(
    comp: Computation,
    params: Sequence[ElementGenerator],
    special: Generators,
    memoized: bool = True,
    wrappers: Mapping[int, Callable[[ElementGenerator], ElementGenerator]] | None = None,
) -> Generators:
    """Generators of every instruction but reduces; ``special`` ones are given, ``wrappers``
    wrap the made generator of theirs.

    A member read twice at the same index (``add(x, x)``) is emitted once where the first
    value dominates the second (``_memoized``): composed without that, a chain of such
    members emits code exponential in its length.
    """
    gens: Generators = {}
    for inst in comp.post_order():
        if id(inst) in special:
            gens[id(inst)] = special[id(inst)]
        elif inst.opcode is Opcode.PARAMETER:
            gens[id(inst)] = params[parameter_number(inst)]
        elif inst.opcode not in (
            Opcode.REDUCE,
            Opcode.DOT,
            Opcode.FUSION,
        ):  # nested: no element form
            made = make_generator(inst, [gens[id(op)] for op in inst.operands])
            if wrappers and id(inst) in wrappers:
                made = wrappers[id(inst)](made)
            gens[id(inst)] = _memoized(made) if memoized else made
    return gens


def _memoized(generator: ElementGenerator) -> ElementGenerator:
    """``generator``, reusing the value it gave for the same index values in the current block
    (as XLA's fused emitter does: a value from another block might not dominate this one)."""
    cache: dict[tuple[int, ...], tuple[Sequence[ir.Value], ir.Value]] = {}

    def generate(b: ir.IRBuilder, index: Sequence[ir.Value]) -> ir.Value:
        key = tuple(map(id, index))  # the cache keeps the index alive: its ids stay unique
        _, value = cache.get(key, ((), None))
        if value is None or (isinstance(value, ir.Instruction) and value.parent is not b.block):
            value = generator(b, index)
            cache[key] = (index, value)
        return value

    return generate


def _emit_loop_fusion(b: ir.IRBuilder, io: KernelIO, comp: Computation) -> None:
    gens = _generators(comp, io.operands, {})
    root = comp.root
    if root.opcode is Opcode.REDUCE:
        operands = [gens[id(op)] for op in root.operands]
        emit_reduce_kernel(b, KernelIO(root, io.outputs, operands, split=io.split))
        return
    if root.opcode is Opcode.CONCATENATE:
        operands = [gens[id(op)] for op in root.operands]
        emit_concat_store_loops(b, root, operands, io.outputs[0], split=io.split)
        return
    keep = reads_along_last(root)
    emit_store_loop(b, gens[id(root)], io.outputs[0], root.array_shape, io.split, keep)


def fusion_scratch_bytes(inst: Instruction, info: VectorInfo) -> int:
    """Scratch for an output fusion on the GEMM engine or a nested producer's row buffer;
    other fusions need none."""
    attention = _attention(inst)
    if attention is not None:
        return attention_scratch_bytes(attention, info)
    producer = _nested_producer(inst)
    if producer is not None:
        return _nested_scratch_bytes(inst, producer, info)
    spec = _fused_gemm(inst, info) or _fused_conv(inst)
    if isinstance(spec, RowConv) and _scales_weights(inst, spec):
        return spec.scaled_bytes(info)
    own = spec.scratch_bytes(info) if spec is not None else 0
    if spec is not None and _input_scale(inst) is not None:
        return _aligned(_contraction(_plan(inst)).operands[0].array_shape.byte_size) + own
    return own


def _input_scale(fusion: Instruction) -> tuple[Instruction, Instruction] | None:
    """The parameters ``(x, s)`` when an output fusion's convolution reads ``x`` scaled per
    feature by ``s`` (the input scale ``fusion_plan`` accepts), else None."""
    plan = _plan(fusion)
    conv = plan.dot if plan.kind is FusionKind.OUTPUT else None
    if conv is None or conv.opcode is not Opcode.CONVOLUTION:
        return None
    if conv.operands[0].opcode is not Opcode.MULTIPLY:
        return None
    x, scale = conv.operands[0].operands
    if scale.opcode is not Opcode.BROADCAST:
        x, scale = scale, x
    source = scale.operands[0]
    return x, source.operands[0] if source.opcode is Opcode.RESHAPE else source


def _scales_weights(fusion: Instruction, spec: FastConv) -> bool:
    """Whether the row-tiled kernel scales its weights instead of the input: exact where no
    tap reads padding (a zero times an infinite scaled weight is NaN, a skipped tap is not),
    and for weights of at most ``SCALED_WEIGHTS_MAX`` bytes."""
    if not isinstance(spec, RowConv) or _input_scale(fusion) is None:
        return False
    if spec.weights.nbytes > SCALED_WEIGHTS_MAX:
        return False
    return all(w.pad_low <= 0 and w.pad_high <= 0 for w in spec.window)


def _nested_scratch_bytes(fusion: Instruction, producer: Instruction, info: VectorInfo) -> int:
    """The row buffer, or where no row form exists the producer's whole output and then what
    either kernel needs."""
    form = expand_depthwise(producer, fusion)
    if form is not None:
        return form.scratch_bytes(info)
    spec = _fused_conv(fusion)
    own = spec.scratch_bytes(info) if spec is not None else 0
    return _aligned(producer.array_shape.byte_size) + max(fusion_scratch_bytes(producer, info), own)


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


def fusion_packed_operands(inst: Instruction, info: VectorInfo) -> frozenset[int]:
    """The fusion operand holding an output fusion's constant weights, when the GEMM engine
    packs them at compile time and nothing else in the fusion reads them."""
    if _attention(inst) is not None:
        return frozenset()
    producer = _nested_producer(inst)
    nested = _nested_packed(inst, producer, info) if producer is not None else frozenset()
    spec = _fused_gemm(inst, info) or _fused_conv(inst)
    if not packs_weights(spec):
        return nested
    comp, dot = inst.called[0], _contraction(_plan(inst))
    weights = dot.operands[1]
    if len(comp.users().get(id(weights), [])) != 1 or dot.operands[0] is weights:
        return nested
    return nested | {parameter_number(weights)}


def _nested_packed(fusion: Instruction, producer: Instruction, info: VectorInfo) -> frozenset[int]:
    """The outer parameter numbers of the nested producer's packed weights read nowhere else."""
    comp, nested = fusion.called[0], _contraction(_plan(fusion)).operands[0]
    users = comp.users()
    numbers = fusion_packed_operands(producer, info)
    params = [nested.operands[n] for n in numbers]
    return frozenset(parameter_number(p) for p in params if users[id(p)] == [nested])


def _nested_producer(fusion: Instruction) -> Instruction | None:
    """The producer fusion nested as an output fusion's convolution input (the expand fusion
    pass), as if in the entry: its operands the outer fusion's; or None."""
    plan = _plan(fusion)
    conv = plan.dot if plan.kind is FusionKind.OUTPUT else None
    if conv is None or conv.operands[0].opcode is not Opcode.FUSION:
        return None
    nested = conv.operands[0]
    operands = [fusion.operands[parameter_number(p)] for p in nested.operands]
    return Instruction(
        nested.name, Opcode.FUSION, nested.shape, operands, nested.attrs, called=list(nested.called)
    )


def _emit_expand_fusion(
    b: ir.IRBuilder, io: KernelIO, comp: Computation, conv: Instruction, producer: Instruction
) -> None:
    """A depthwise convolution and the producer of its input, its rows in a rolling buffer
    (``conv_expand.py``); without row forms, the producer's whole output in scratch."""
    form = expand_depthwise(producer, io.inst)
    pointers = [p for p in io.pointers if p is not None]
    assert io.scratch is not None, "a nested producer always asks for scratch"
    if form is None or len(pointers) != len(io.pointers):
        _emit_nested_whole(b, io, comp, conv, producer)
        return
    nested = conv.operands[0]
    inner = [pointers[parameter_number(p)] for p in nested.operands]
    x, w = (inner[parameter_number(op)] for op in _contraction(_plan(producer)).operands)
    call = GemmCall(io.outputs[0], x, w, None, inner)
    produce = row_emitter(b, form.producer, io.vector, call, partial(_epilogue, producer))
    weights = pointers[parameter_number(conv.operands[1])]
    call = GemmCall(io.outputs[0], io.scratch, weights, None, pointers)
    epilogue = partial(_epilogue, io.inst)
    lines = ring_lines(form, io.scratch)
    emit_row = depthwise_row_emitter(b, form.depthwise, io.vector, call, epilogue, lines)
    with expand_rows(b, form, produce, io.scratch, io.split) as (n, oh):
        emit_row(b, n, oh)


def _emit_nested_whole(
    b: ir.IRBuilder, io: KernelIO, comp: Computation, conv: Instruction, producer: Instruction
) -> None:
    """The producer's kernel into the start of scratch, then the convolution reading it there
    (what the unfused kernels do, the tensor in scratch instead of a buffer of its own)."""
    assert io.scratch is not None
    numbers = [parameter_number(p) for p in conv.operands[0].operands]
    rest = b.gep(io.scratch, [i64(_aligned(producer.array_shape.byte_size))], source_etype=I8)
    operands = [io.operands[n] for n in numbers]
    pointers = [io.pointer(n) for n in numbers]
    emit_fusion_kernel(b, KernelIO(producer, [io.scratch], operands, pointers, rest, io.vector))
    _emit_conv_output_fusion(b, replace(io, scratch=rest), comp, conv, io.scratch)


def _fused_gemm(fusion: Instruction, info: VectorInfo) -> GemmDot | None:
    """The GEMM form of an output fusion's dot, when its epilogue can run in the tile store.

    The dot must read two fusion parameters and the root have the dot's f32 shape. A fusion
    that may write over an operand (in place) needs a GEMM that stores each tile once: the
    epilogue would otherwise read the operand where partial sums already are.
    """
    comp, plan = fusion.called[0], _plan(fusion)
    if plan.kind is not FusionKind.OUTPUT:
        return None
    dot, root = _contraction(plan), comp.root
    if dot.opcode is not Opcode.DOT or any(
        op.opcode is not Opcode.PARAMETER for op in dot.operands
    ):
        return None
    if root.is_tuple or root.array_shape.dims != dot.array_shape.dims:
        return None
    if root.array_shape.dtype is not PrimitiveType.F32:
        return None
    spec = gemm_dot(dot, fusion.operands[parameter_number(dot.operands[1])])
    if spec is None or not plan.in_place:
        return spec
    return single_pass_form(spec, info)


def _emit_output_fusion(b: ir.IRBuilder, io: KernelIO, comp: Computation, dot: Instruction) -> None:
    spec = _fused_gemm(io.inst, io.vector)
    lhs, rhs = (io.pointer(parameter_number(op)) for op in dot.operands)
    pointers = [p for p in io.pointers if p is not None]
    if (
        spec is not None
        and lhs is not None
        and rhs is not None
        and len(pointers) == len(io.pointers)
    ):
        call = GemmCall(io.outputs[0], lhs, rhs, io.scratch, pointers, io.split)
        factory = partial(_epilogue, io.inst)
        rolled = any(i.opcode in EXPENSIVE for i in comp.instructions if i is not dot)
        emit_gemm_dot(b, spec, io.vector, call, vector_epilogue=factory, rolled=rolled)
        return
    current: Cells = {}
    gens = _generators(comp, io.operands, {id(dot): _cell_reader(current, dot)})
    root = comp.root

    def finish(b: ir.IRBuilder, value: ir.Value, index: Sequence[ir.Value]) -> None:
        current[id(dot)] = value
        store_element(b, gens[id(root)](b, index), io.outputs[0], root.array_shape, index)

    lhs, rhs = (gens[id(op)] for op in dot.operands)
    emit_dot_loops(b, dot, lhs, rhs, finish)


def _fused_conv(fusion: Instruction) -> FastConv | None:
    """The fast form of an output fusion's convolution (root of its f32 shape), or None.

    Convolution fusions never write over an operand (``FusionPlan.in_place``), so partial sums
    in the output are safe.
    """
    comp, plan = fusion.called[0], _plan(fusion)
    if plan.kind is not FusionKind.OUTPUT or _contraction(plan).opcode is not Opcode.CONVOLUTION:
        return None
    conv, root = _contraction(plan), comp.root
    x, w = conv.operands
    inputs = (Opcode.PARAMETER, Opcode.FUSION, Opcode.MULTIPLY)  # nested producer, input scale
    if x.opcode not in inputs or w.opcode is not Opcode.PARAMETER:
        return None
    if root.is_tuple:
        return None
    if root.array_shape != conv.array_shape:
        return None
    return conv_fast_path(conv, fusion.operands[parameter_number(conv.operands[1])])


def _emit_conv_output_fusion(
    b: ir.IRBuilder,
    io: KernelIO,
    comp: Computation,
    conv: Instruction,
    nested: ir.Value | None = None,
) -> None:
    """A convolution with its epilogue: in the GEMM tile store, or per element of the loops;
    ``nested`` holds the output of a nested producer, the convolution's input."""
    spec = _fused_conv(io.inst)
    w = io.pointer(parameter_number(conv.operands[1]))
    pointers = [p for p in io.pointers if p is not None]
    fast = spec is not None and w is not None and len(pointers) == len(io.pointers)
    scale = _input_scale(io.inst) if nested is None else None
    if fast and scale is not None:
        _emit_scaled_conv(b, io, comp, conv, scale)
        return
    x = nested
    if x is None and conv.operands[0].opcode is Opcode.PARAMETER:
        x = io.pointer(parameter_number(conv.operands[0]))
    if spec is not None and fast and x is not None and w is not None:
        call = GemmCall(io.outputs[0], x, w, io.scratch, pointers, io.split)
        emit_conv_fast_path(b, spec, io.vector, call, partial(_epilogue, io.inst))
        return
    current: Cells = {}
    special = {id(conv): _cell_reader(current, conv)}
    if nested is not None:
        special[id(conv.operands[0])] = buffer_reader(nested, conv.operands[0].array_shape)
    gens = _generators(comp, io.operands, special)
    root = comp.root

    def finish(b: ir.IRBuilder, value: ir.Value, index: Sequence[ir.Value]) -> None:
        current[id(conv)] = value
        store_element(b, gens[id(root)](b, index), io.outputs[0], root.array_shape, index)

    kernel = io.inst.operands[parameter_number(conv.operands[1])]
    emit_conv_loops(b, conv, [gens[id(op)] for op in conv.operands], finish, kernel, io.split)


def _emit_scaled_conv(
    b: ir.IRBuilder,
    io: KernelIO,
    comp: Computation,
    conv: Instruction,
    scale: tuple[Instruction, Instruction],
) -> None:
    """A convolution of its input scaled per feature: on row tiles with the weights scaled,
    else the scaled input stored to scratch first."""
    spec = _fused_conv(io.inst)
    assert spec is not None and io.scratch is not None
    x, s = (io.pointer(parameter_number(p)) for p in scale)
    w = io.pointer(parameter_number(conv.operands[1]))
    if isinstance(spec, RowConv) and _scales_weights(io.inst, spec) and x is not None:
        assert s is not None and w is not None
        call = GemmCall(io.outputs[0], x, w, io.scratch, list(io.pointers), io.split)
        emit_row_conv(b, spec, io.vector, call, partial(_epilogue, io.inst), s)
        return
    product = conv.operands[0]
    gens = _generators(comp, io.operands, {id(conv): _cell_reader({}, conv)})
    emit_store_loop(b, gens[id(product)], io.scratch, product.array_shape)
    rest = b.gep(io.scratch, [i64(_aligned(product.array_shape.byte_size))], source_etype=I8)
    _emit_conv_output_fusion(b, replace(io, scratch=rest), comp, conv, io.scratch)


def _epilogue(fusion: Instruction, b: ir.IRBuilder, pointers: list[ir.Value]) -> VectorEpilogue:
    """The fused computation around the dot on vectors, reading the fusion's operands at
    ``pointers``; instructions without a vector form run lane by lane on element generators."""
    return _vector_map(fusion, pointers, _contraction(_plan(fusion)), fusion.called[0].root)


def _vector_map(
    fusion: Instruction, pointers: list[ir.Value], source: Instruction, target: Instruction
) -> VectorEpilogue:
    """``target`` on vectors, given ``source``'s vector at the same index (reading the other
    operands at ``pointers``). Other dots and reduces of the computation must not be read on
    the way (the plan checked): their generators fail if called."""
    comp = fusion.called[0]
    operands = list(zip(fusion.operands, pointers, strict=True))
    readers = [operand_reader(op, p) for op, p in operands]
    vectors: Cells = {}
    lane = [0]  # the lane the element generators compute when an instruction falls back

    def source_lane(b: ir.IRBuilder, index: Sequence[ir.Value]) -> ir.Value:
        return b.extract_element(vectors[id(source)], i64(lane[0]))  # only where it is read

    def before_lane(b: ir.IRBuilder, number: int) -> None:
        lane[0] = number

    opaque = [i for i in comp.instructions if i.opcode in _NO_ELEMENTS and i is not source]
    scalars = _generators(
        comp,
        readers,
        {**{id(i): _unreadable for i in opaque}, id(source): source_lane},
        memoized=False,
    )  # lane state
    memo: Memo = {}

    params = [operand_vector_reader(op, p) for op, p in operands]
    special: dict[int, VectorGenerator] = {id(i): _unreadable for i in opaque}
    special[id(source)] = lambda b, index, width: vectors[id(source)]
    gens = vector_generators(comp, params, scalars, special, before_lane, memo)

    def apply(b: ir.IRBuilder, values: ir.Value, index: Sequence[ir.Value]) -> ir.Value:
        vectors[id(source)] = values
        memo.clear()
        return gens[id(target)](b, index, values.type.count)

    return apply


_NO_ELEMENTS = (Opcode.DOT, Opcode.REDUCE, Opcode.CONVOLUTION)


def _unreadable(*_: object) -> ir.Value:
    raise AssertionError("a vector map read a dot or reduce its plan keeps out")


def _buffers(io: KernelIO) -> list[ir.Value]:
    pointers = [p for p in io.pointers if p is not None]
    if len(pointers) != len(io.inst.operands):
        raise CodegenError(f"fusion %{io.inst.name}: attention operands must be buffers")
    return pointers


def _cell_reader(cells: Cells, inst: Instruction) -> ElementGenerator:
    """The generator of a value computed earlier in the loop: the index is already fixed."""
    return lambda b, index: cells[id(inst)]


# ---- row fusions -----------------------------------------------------------------------------


#: Rows at most this long are emitted in blocks of ``ROW_BLOCK`` (when the innermost row
#: dimension divides): a short row is a chain of dependent steps (a horizontal max, exp of
#: the max-shifted row, a sum, ...) too long for the out-of-order window to overlap with the
#: next row's; emitting each step for the block's rows one after the other gives that overlap.
SHORT_ROW = 256
ROW_BLOCK = 4


def _emit_row_fusion(b: ir.IRBuilder, io: KernelIO, comp: Computation, plan: FusionPlan) -> None:
    cells: Cells = {}
    k = plan.row_rank
    row_dims = plan.cached[0].array_shape.dims
    block = _row_block(row_dims, plan.cached[0].operands[0].array_shape.dims[k:])
    buffers = [_RowBuffer(b, m, k, block) for m in plan.rows]
    wrappers = {id(buffer.member): buffer.generator for buffer in buffers}
    special = {id(m): _cell_reader(cells, m) for m in plan.cached}
    gens = _generators(comp, io.operands, special, wrappers=wrappers)
    blocked = [*row_dims[:-1], row_dims[-1] // block] if row_dims else []  # K may be a scalar
    with loop_nest(b, blocked, "row", io.split) as outer:
        rows = [_blocked_row(b, outer, block, j) for j in range(block)]
        values: list[Cells] = [{} for _ in rows]
        for member in plan.cached:
            for j, row in enumerate(rows):
                _select_row(j, cells, values, buffers)
                values[j][id(member)] = _row_value(b, member, gens, row)
            for buffer in buffers:
                buffer.loop_done()
        for j, row in enumerate(rows):
            _select_row(j, cells, values, buffers)
            _emit_row_root(b, io, comp.root, gens, row)


def _row_block(row_dims: Sequence[int], row: Sequence[int]) -> int:
    length = 1
    for size in row:
        length *= size
    if length > SHORT_ROW or not row_dims or row_dims[-1] % ROW_BLOCK:
        return 1
    return ROW_BLOCK


def _blocked_row(b: ir.IRBuilder, outer: Sequence[ir.Value], block: int, j: int) -> list[ir.Value]:
    """Row ``j`` of the block at ``outer`` (whose last index counts blocks)."""
    if block == 1:
        return list(outer)
    last = b.add(b.mul(outer[-1], i64(block)), i64(j))
    return [*outer[:-1], last]


def _select_row(j: int, cells: Cells, values: list[Cells], buffers: Sequence[_RowBuffer]) -> None:
    """Make row ``j`` of the block the one the generators read (cells, row buffers)."""
    cells.clear()
    cells.update(values[j])
    for buffer in buffers:
        buffer.current = j


def _emit_row_root(
    b: ir.IRBuilder, io: KernelIO, root: Instruction, gens: Generators, row: Sequence[ir.Value]
) -> None:
    shape, k = root.array_shape, len(row)
    if root.opcode is Opcode.REDUCE:
        store_element(b, _fold_row(b, root, gens, row), io.outputs[0], shape, row)
    elif shape.rank == k:
        store_element(b, gens[id(root)](b, row), io.outputs[0], shape, row)
    else:
        with loop_nest(b, shape.dims[k:], "col") as col:
            index = [*row, *col]
            store_element(b, gens[id(root)](b, index), io.outputs[0], shape, index)


class _RowBuffer:
    """The stack rows of a row member, one per row of a block: the first loop generating the
    member's elements of a row stores them there, the later loops (after that loop is done)
    load them instead of recomputing."""

    def __init__(self, b: ir.IRBuilder, member: Instruction, k: int, block: int):
        self.member = member
        self.dims = member.array_shape.dims[k:]
        self.k = k
        size = 1
        for d in self.dims:
            size *= d
        self.element = register_type(member.array_shape.dtype)
        self.type = ir.ArrayType(self.element, size)
        self.rows = [entry_alloca(b, self.type, f"row.{member.name}") for _ in range(block)]
        self.current = 0  # the block's row being emitted
        self.filled = [False] * block  # a finished loop has stored the whole row
        self.written = [False] * block  # the loop being emitted stores the row

    def loop_done(self) -> None:
        self.filled = [f or w for f, w in zip(self.filled, self.written, strict=True)]

    def generator(self, compute: ElementGenerator) -> ElementGenerator:
        def generate(b: ir.IRBuilder, index: Sequence[ir.Value]) -> ir.Value:
            j = self.current
            offset = linear_index(b, index[self.k :], self.dims)
            pointer = b.gep(self.rows[j], [i64(0), offset], inbounds=True, source_etype=self.type)
            if self.filled[j]:
                return b.load(pointer, typ=self.element)
            value = compute(b, index)
            b.store(value, pointer)
            self.written[j] = True
            return value

        return generate


def _row_value(
    b: ir.IRBuilder, member: Instruction, gens: Generators, row: Sequence[ir.Value]
) -> ir.Value:
    if member.opcode is Opcode.REDUCE:
        return _fold_row(b, member, gens, row)
    generator = make_generator(member, [gens[id(op)] for op in member.operands])
    return generator(b, row)


def _fold_row(
    b: ir.IRBuilder, reduce: Instruction, gens: Generators, row: Sequence[ir.Value]
) -> ir.Value:
    """Fold the trailing (reduced) dimensions of ``reduce``'s operand at ``row``.

    ``fold_loop`` makes float add/max accumulations reassociable, so the loop vectorizer turns
    the reduced loop, elemental body included (exp of softmax, squares of layer norm), into
    vector code with several accumulators.
    """
    data, init = reduce.operands
    reduced = data.array_shape.dims[len(row) :]

    def element(b: ir.IRBuilder, r: Sequence[ir.Value]) -> ir.Value:
        return gens[id(data)](b, [*row, *r])

    return fold_loop(b, reduce, element, gens[id(init)](b, []), reduced)
