"""Expand fusion: a depthwise convolution's output fusion takes in the fusion producing its input.

After instruction fusion, a MobileNet-style inverted residual is three output fusions: the 1x1
expand convolution with its bias and activation, the depthwise convolution with its own, and
the 1x1 projection. The expanded tensor between the first two is the block's largest. This
pass moves the producer fusion (a convolution with one feature group), unchanged, into the
depthwise (grouped) convolution's fusion as that convolution's input: the fusion's parameters
become the producer's operands and the depthwise's other ones, and the expanded tensor is no
buffer any more. Codegen (``aotc/codegen/kernels/conv_expand.py``) runs the producer on row
tiles into a rolling buffer of the window's height, which the depthwise kernel reads; where
either has no row form, the producer's whole output goes to the kernel's scratch instead.

Only producers read by nothing else are taken, so nothing is computed twice, and only inputs
of at least ``MIN_ROWS`` rows: smaller tensors stay in the caches anyway, and there a range of
rows computed on one thread recomputes a larger share of its window's rows (``KH - stride``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aotc.hlo.builder import NameUniquer
from aotc.hlo.fusion_plan import plan_computation
from aotc.hlo.ir import (
    Computation,
    ConvAttrs,
    FusionAttrs,
    FusionKind,
    Instruction,
    Module,
    Opcode,
    ParameterAttrs,
    parameter_number,
)
from aotc.passes.rewrite import module_names

#: Depthwise inputs with fewer rows keep their own buffer (see the module docstring).
MIN_ROWS = 28


@dataclass(frozen=True)
class ExpandFusion:
    """Nest the producer fusion of a depthwise convolution's input into its fusion."""

    name: str = "expand-fusion"
    min_rows: int = MIN_ROWS

    def run(self, module: Module) -> bool:
        changed = False
        names = module_names(module)
        for comp in module.sequential_computations():
            users = comp.users()
            pairs = [(c, p) for c in comp.instructions if (p := self._producer(c, users, comp))]
            for consumer, producer in pairs:
                _nest(module, consumer, producer, names)
            if pairs:
                comp.instructions = comp.post_order()
                changed = True
        return changed

    def _producer(
        self, consumer: Instruction, users: dict[int, list[Instruction]], comp: Computation
    ) -> Instruction | None:
        """The fusion ``consumer`` can take in, or None."""
        conv = _convolution(consumer)
        if conv is None or conv.attrs_as(ConvAttrs).feature_group_count == 1:
            return None  # not depthwise
        x = _input_parameter(consumer)
        if x is None:
            return None
        producer = consumer.operands[parameter_number(x)]
        inner = _convolution(producer)
        if inner is None or inner.attrs_as(ConvAttrs).feature_group_count != 1:
            return None
        if users.get(id(producer)) != [consumer] or producer is comp.root:
            return None
        if sum(op is producer for op in consumer.operands) != 1:
            return None
        shape = producer.array_shape
        return producer if shape.rank == 4 and min(shape.dims[1:3]) >= self.min_rows else None


def _convolution(fusion: Instruction) -> Instruction | None:
    """An output fusion's convolution, or None."""
    if fusion.opcode is not Opcode.FUSION:
        return None
    plan = fusion.attrs_as(FusionAttrs).plan
    conv = plan.dot if plan is not None and plan.kind is FusionKind.OUTPUT else None
    return conv if conv is not None and conv.opcode is Opcode.CONVOLUTION else None


def _input_parameter(fusion: Instruction) -> Instruction | None:
    """The parameter an output fusion's convolution reads as its input, when nothing else in
    the fusion reads it."""
    conv = _convolution(fusion)
    x = conv.operands[0] if conv is not None else None
    if x is None or x.opcode is not Opcode.PARAMETER:
        return None
    return x if fusion.called[0].users()[id(x)] == [conv] else None


def _nest(module: Module, consumer: Instruction, producer: Instruction, names: NameUniquer) -> None:
    """Replace ``consumer``'s input parameter by ``producer`` (a copy calling the same fused
    computation) over parameters for its operands, renumbering the parameters."""
    comp = consumer.called[0]
    x = _input_parameter(consumer)
    assert x is not None
    kept = [op for number, op in enumerate(consumer.operands) if number != parameter_number(x)]
    operands = list({id(op): op for op in [*kept, *producer.operands]}.values())
    params = {id(op): p for p in comp.parameters if (op := consumer.operands[parameter_number(p)])}
    for number, op in enumerate(operands):
        if id(op) in params:
            params[id(op)].attrs = ParameterAttrs(number)
        else:
            name = names.get(f"param_{number}")
            params[id(op)] = Instruction(
                name, Opcode.PARAMETER, op.shape, attrs=ParameterAttrs(number)
            )
    nested = Instruction(
        producer.name,
        Opcode.FUSION,
        producer.shape,
        [params[id(op)] for op in producer.operands],
        producer.attrs,
        called=list(producer.called),
    )
    for inst in comp.instructions:
        inst.operands = [nested if op is x else op for op in inst.operands]
    body = [i for i in comp.instructions if i.opcode is not Opcode.PARAMETER]
    comp.instructions = [*(params[id(op)] for op in operands), *body]
    comp.instructions = comp.post_order()
    consumer.operands = operands
    _place_before(module, producer.called[0], comp)
    plan = plan_computation(comp)
    assert plan is not None and plan.kind is FusionKind.OUTPUT, "a nested producer keeps it"
    consumer.attrs = FusionAttrs(FusionKind.OUTPUT, plan)


def _place_before(module: Module, callee: Computation, caller: Computation) -> None:
    """List ``callee`` before ``caller`` (callees first, as the printer and parser expect)."""
    module.computations.remove(callee)
    module.computations.insert(module.computations.index(caller), callee)
