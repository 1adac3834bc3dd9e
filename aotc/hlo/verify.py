"""Structural and shape checks for HLO modules, written as data.

Three lists of small checks run in order: module checks, structural checks per computation
(operands defined before use, root, parameter numbering), then instruction checks (operand
count, attribute class and called computations as the opcode's row in ``opcodes.py`` says,
their signatures, dimensions, literal, re-inferred shape). The first problem found raises
``HloError("verifier: <computation>/<instruction>: <problem>")``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from aotc.errors import HloError, ShapeError
from aotc.hlo.fusion_plan import plan_problem
from aotc.hlo.ir import Computation, Instruction, Module, Opcode, ParameterAttrs
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape, TupleShape
from aotc.hlo.shape_inference import infer_instruction_shape
from aotc.registry import Registry


def verify_module(module: Module) -> None:
    """Raise ``HloError`` naming computation, instruction and problem, or return None."""
    ctx = _Context(module)
    for module_check in MODULE_CHECKS:
        module_check(ctx)
    for comp_check in COMPUTATION_CHECKS:
        for comp in module.computations:
            comp_check(ctx, comp)
    for comp in module.computations:
        for inst in comp.instructions:
            for inst_check in INSTRUCTION_CHECKS:
                problem = _problem_of(inst_check, ctx, inst)
                if problem:
                    _fail(comp, inst.name, problem)


@dataclass
class _Context:
    module: Module
    owner: dict[int, Computation] = field(default_factory=dict)  # id(instruction) -> computation
    computations: set[int] = field(default_factory=set)  # id(computation) of each in the module

    def __post_init__(self) -> None:
        for comp in self.module.computations:
            self.computations.add(id(comp))
            for inst in comp.instructions:
                self.owner.setdefault(id(inst), comp)

    def in_module(self, comp: Computation) -> bool:
        return id(comp) in self.computations


def _fail(comp: Computation, where: str, problem: str) -> None:
    place = f"{comp.name}/{where}" if where else comp.name
    raise HloError(f"verifier: {place}: {problem}")


InstructionCheck = Callable[[_Context, Instruction], "str | None"]


def _problem_of(check: InstructionCheck, ctx: _Context, inst: Instruction) -> str | None:
    try:
        return check(ctx, inst)
    except ShapeError as e:  # shape inference says what does not fit
        return str(e)


# ---- module checks ---------------------------------------------------------------------------


def _unique_names(ctx: _Context) -> None:
    seen: dict[str, Computation] = {}
    for comp in ctx.module.computations:
        for inst in comp.instructions:
            if inst.name in seen:
                _fail(
                    comp,
                    inst.name,
                    f"name is used twice in the module (also in "
                    f"computation {seen[inst.name].name})",
                )
            seen[inst.name] = comp
    comp_names = Counter(c.name for c in ctx.module.computations)
    for comp in ctx.module.computations:
        if comp_names[comp.name] > 1:
            _fail(comp, "", "computation name is used twice in the module")


def _acyclic_calls(ctx: _Context) -> None:
    done: set[int] = set()
    for start in ctx.module.computations:
        if id(start) not in done:
            _check_calls_from(start, done)


def _check_calls_from(start: Computation, done: set[int]) -> None:
    """Depth-first over the computations ``start`` calls (iterative: loops nest deeply)."""
    path: list[Computation] = [start]
    on_path = {id(start)}
    calls: list[Iterator[tuple[Instruction, Computation]]] = [_calls(start)]
    while path:
        step = next(calls[-1], None)
        if step is None:
            done.add(id(path[-1]))
            on_path.discard(id(path.pop()))
            calls.pop()
            continue
        inst, callee = step
        if id(callee) in on_path:
            chain = " -> ".join(c.name for c in (*path, callee))
            _fail(path[-1], inst.name, f"calls {callee.name}, which calls it back: {chain}")
        if id(callee) not in done:
            path.append(callee)
            on_path.add(id(callee))
            calls.append(_calls(callee))


def _calls(comp: Computation) -> Iterator[tuple[Instruction, Computation]]:
    return ((inst, callee) for inst in comp.instructions for callee in inst.called)


MODULE_CHECKS: list[Callable[[_Context], None]] = [_unique_names, _acyclic_calls]


# ---- computation checks (structure) ----------------------------------------------------------


def _operands_defined_earlier(ctx: _Context, comp: Computation) -> None:
    position = {id(inst): i for i, inst in enumerate(comp.instructions)}
    for i, inst in enumerate(comp.instructions):
        for op in inst.operands:
            where = position.get(id(op))
            if where is None:
                other = ctx.owner.get(id(op))
                home = f"computation {other.name}" if other else "no computation of the module"
                _fail(comp, inst.name, f"operand {op.name} belongs to {home}")
            elif where >= i:
                _fail(
                    comp,
                    inst.name,
                    f"operand {op.name} is used before it is defined "
                    "(instructions must be in def-before-use order)",
                )


def _root_belongs(ctx: _Context, comp: Computation) -> None:
    if not any(inst is comp.root for inst in comp.instructions):
        _fail(comp, comp.root.name, "root is not an instruction of this computation")


def _parameter_numbers(ctx: _Context, comp: Computation) -> None:
    params = [i for i in comp.instructions if i.opcode is Opcode.PARAMETER]
    numbers: dict[int, Instruction] = {}
    for param in params:
        if not isinstance(param.attrs, ParameterAttrs):
            _fail(comp, param.name, f"parameter needs ParameterAttrs, got {param.attrs!r}")
            return
        number = param.attrs.number
        if number in numbers:
            _fail(
                comp,
                param.name,
                f"parameter number {number} is also used by {numbers[number].name}",
            )
        if not 0 <= number < len(params):
            last = len(params) - 1
            _fail(
                comp,
                param.name,
                f"parameter number {number} leaves a gap: the "
                f"{len(params)} parameters must be numbered 0..{last}",
            )
        numbers[number] = param


COMPUTATION_CHECKS: list[Callable[[_Context, Computation], None]] = [
    _operands_defined_earlier,
    _root_belongs,
    _parameter_numbers,
]


# ---- instruction checks ----------------------------------------------------------------------


def _operand_count(ctx: _Context, inst: Instruction) -> str | None:
    info, n = inst.opcode.info, len(inst.operands)
    if n == info.arity or (info.variadic and n > info.arity):
        return None
    wanted = f"at least {info.arity}" if info.variadic else str(info.arity)
    return f"{inst.opcode.value} takes {wanted} operands, got {n}"


def _attrs_type(ctx: _Context, inst: Instruction) -> str | None:
    kind = inst.opcode.info.attrs
    if kind is None and inst.attrs is not None:
        return f"{inst.opcode.value} takes no attrs, got {inst.attrs!r}"
    if kind is not None and not isinstance(inst.attrs, kind):
        return f"{inst.opcode.value} needs {kind.__name__} attrs, got {inst.attrs!r}"
    return None


#: Per opcode that calls computations (``opcode.info.called``): the check of their signatures.
CALL_CHECKS: Registry[Opcode, InstructionCheck] = Registry("called-computation check")


@CALL_CHECKS.register(Opcode.REDUCE, Opcode.REDUCE_WINDOW)
def _reducer_signature(ctx: _Context, inst: Instruction) -> str | None:
    """``to_apply`` of a reduce of N operands: (T0..TN-1, T0..TN-1) -> T0 or (T0..TN-1)."""
    comp, n = inst.called[0], len(inst.operands) // 2
    inits = [op.shape for op in inst.operands[n:]]
    if not all(isinstance(s, Shape) and s.rank == 0 for s in inits):
        return None  # shape inference reports the bad init values
    return _folds(comp, [s.dtype for s in inits if isinstance(s, Shape)], "reducer")


def _folds(comp: Computation, types: list[PrimitiveType], what: str) -> str | None:
    """``comp`` folds N values of ``types`` into N accumulators of ``types``."""
    want: list[AnyShape] = [Shape(t) for t in types * 2]
    got: list[AnyShape] = [p.shape for p in comp.parameters]
    if got != want:
        return f"{what} {comp.name} takes {_shapes(got)}, must take {_shapes(want)}"
    n = len(types)
    result: AnyShape = want[0] if n == 1 else TupleShape(tuple(want[:n]))
    if comp.root.shape != result:
        return f"{what} {comp.name} returns {comp.root.shape}, must return {result}"
    return None


@CALL_CHECKS.register(Opcode.SORT)
def _comparator_signature(ctx: _Context, inst: Instruction) -> str | None:
    """``to_apply`` of a sort of N operands: (T0, T0, T1, T1, ...) -> pred[]."""
    comp = inst.called[0]
    types = [op.shape.dtype for op in inst.operands if isinstance(op.shape, Shape)]
    want: list[AnyShape] = [Shape(t) for t in types for _ in range(2)]
    got: list[AnyShape] = [p.shape for p in comp.parameters]
    if got != want:
        return f"comparator {comp.name} takes {_shapes(got)}, must take {_shapes(want)}"
    if comp.root.shape != Shape(PrimitiveType.PRED):
        return f"comparator {comp.name} returns {comp.root.shape}, must return pred[]"
    return None


@CALL_CHECKS.register(Opcode.SCATTER)
def _update_signature(ctx: _Context, inst: Instruction) -> str | None:
    """``to_apply`` of a scatter into N operands: (T0..TN-1, T0..TN-1) -> T0 or (T0..TN-1)."""
    n = len(inst.operands) // 2
    types = [op.shape.dtype for op in inst.operands[:n] if isinstance(op.shape, Shape)]
    return _folds(inst.called[0], types, "update computation")


@CALL_CHECKS.register(Opcode.FUSION)
def _fusion_signature(ctx: _Context, inst: Instruction) -> str | None:
    comp = inst.called[0]
    want = [op.shape for op in inst.operands]
    got = [p.shape for p in comp.parameters]
    if got != want:
        return f"fused computation {comp.name} takes {_shapes(got)}, operands are {_shapes(want)}"
    return plan_problem(inst)


@CALL_CHECKS.register(Opcode.CALL, Opcode.WHILE, Opcode.CONDITIONAL)
def _control_flow_signature(ctx: _Context, inst: Instruction) -> str | None:
    """The shape rules of control flow check the signatures (the builder relies on that)."""
    infer_instruction_shape(inst)  # a ShapeError says what does not fit
    return None


def _shapes(shapes: list[AnyShape]) -> str:
    return "(" + ", ".join(map(str, shapes)) + ")"


def _called_computations(ctx: _Context, inst: Instruction) -> str | None:
    keys, listed = inst.opcode.info.called, inst.opcode.info.called_list
    if not keys:
        return f"{inst.opcode.value} calls no computation" if inst.called else None
    if listed is not None and not inst.called:
        return f"{inst.opcode.value} calls at least one computation ({listed}), got none"
    if listed is None and len(inst.called) != len(keys):
        wanted, got = " and ".join(keys), len(inst.called)
        return f"{inst.opcode.value} calls {len(keys)} computation(s) ({wanted}), got {got}"
    for callee in inst.called:
        if not ctx.in_module(callee):
            return f"calls computation {callee.name}, which is not in the module"
    return CALL_CHECKS[inst.opcode](ctx, inst)


def _dims_non_negative(ctx: _Context, inst: Instruction) -> str | None:
    def arrays(shape: AnyShape) -> list[Shape]:
        if isinstance(shape, TupleShape):
            return [a for element in shape.elements for a in arrays(element)]
        return [shape]

    bad = [s for s in arrays(inst.shape) if any(d < 0 for d in s.dims)]
    return f"shape {bad[0]} has a negative dimension" if bad else None


def _constant_literal(ctx: _Context, inst: Instruction) -> str | None:
    if inst.opcode is not Opcode.CONSTANT:
        return None
    if inst.literal is None or not isinstance(inst.shape, Shape):
        return "constant needs an array literal and an array shape"
    lit = inst.literal
    if lit.dtype != inst.shape.dtype.numpy or lit.shape != inst.shape.dims:
        return f"literal {lit.dtype}{list(lit.shape)} does not match the shape {inst.shape}"
    return None


def _inferred_shape(ctx: _Context, inst: Instruction) -> str | None:
    inferred = infer_instruction_shape(inst)
    if inferred != inst.shape:
        return f"shape {inst.shape} does not match {inferred}, inferred from its operands"
    return None


INSTRUCTION_CHECKS: list[InstructionCheck] = [
    _operand_count,
    _attrs_type,
    _called_computations,
    _dims_non_negative,
    _constant_literal,
    _inferred_shape,
]
