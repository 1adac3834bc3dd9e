"""Scheduling and buffer assignment: liveness, sharing, alignment, in place, the bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pass_testing import random_args

from aotc.codegen.buffers import ALIGN, Allocation, BufferKind, assign_buffers, pack
from aotc.driver import compile_graph
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Module
from aotc.hlo.memory import MemoryModel, peak_bytes
from aotc.hlo.text import parse_module, print_module
from aotc.jit import JitModel
from aotc.passes import PipelineOptions
from aotc.passes.schedule import Schedule, greedy_schedule


def module(body: str) -> Module:
    return parse_module(f"ENTRY main {{\n{body}\n}}")


def test_disjoint_lifetimes_share_memory() -> None:
    a, b = Allocation(128, 0, 1), Allocation(128, 2, 3)
    assert pack([a, b]) == 128
    assert a.offset == b.offset == 0


def test_overlapping_lifetimes_do_not_share() -> None:
    a, b, c = Allocation(128, 0, 2), Allocation(64, 1, 3), Allocation(192, 3, 4)
    total = pack([a, b, c])
    assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset
    assert b.offset + b.size <= c.offset or c.offset + c.size <= b.offset
    assert total == 256  # c reuses a's bytes once a is dead


def test_offsets_are_aligned() -> None:
    m = module("""
      x = f32[3] parameter(0)
      a = f32[3] exponential(x)
      b = f32[3] log(x)
      c = f32[3] add(a, b)
      ROOT t = (f32[3]) tuple(c)""")
    assignment = assign_buffers(m.entry)
    temps = [assignment.buffer(i) for i in m.entry.instructions if i.name in ("a", "b")]
    assert all(t.kind is BufferKind.TEMP and t.offset % ALIGN == 0 for t in temps)
    assert temps[0].offset != temps[1].offset
    assert assignment.temp_bytes == ALIGN + 12 == assignment.peak_live_bytes  # last: no padding


def test_chain_of_elementwise_ops_runs_in_place() -> None:
    m = module("""
      x = f32[256] parameter(0)
      a = f32[256] exponential(x)
      b = f32[256] negate(a)
      c = f32[256] tanh(b)
      d = f32[256] multiply(c, c)
      ROOT t = (f32[256]) tuple(d)""")
    assignment = assign_buffers(m.entry)
    by_name = {i.name: i for i in m.entry.instructions}
    offsets = {assignment.buffer(by_name[n]).offset for n in "abc"}
    assert offsets == {0}
    assert assignment.temp_bytes == 1024 == assignment.peak_live_bytes
    assert {by_name["b"].name, by_name["c"].name} <= {
        i.name for i in m.entry.instructions if id(i) in assignment.in_place
    }
    assert assignment.buffer(by_name["d"]).kind is BufferKind.RESULT


def test_no_in_place_over_a_value_still_needed() -> None:
    m = module("""
      x = f32[256] parameter(0)
      a = f32[256] exponential(x)
      b = f32[256] negate(a)
      c = f32[256] add(a, b)
      ROOT t = (f32[256]) tuple(c)""")
    assignment = assign_buffers(m.entry)
    by_name = {i.name: i for i in m.entry.instructions}
    assert assignment.buffer(by_name["a"]).offset != assignment.buffer(by_name["b"]).offset


def test_reshape_aliases_and_extends_the_lifetime() -> None:
    m = module("""
      x = f32[4,64] parameter(0)
      a = f32[4,64] exponential(x)
      r = f32[256] reshape(a)
      b = f32[4,64] log(x)
      rb = f32[256] reshape(b)
      c = f32[256] add(r, rb)
      ROOT t = (f32[256]) tuple(c)""")
    assignment = assign_buffers(m.entry)
    by_name = {i.name: i for i in m.entry.instructions}
    assert assignment.buffer(by_name["r"]) == assignment.buffer(by_name["a"])
    assert assignment.buffer(by_name["a"]).offset != assignment.buffer(by_name["b"]).offset


BRANCHES = """
  x = f32[1024] parameter(0)
  a1 = f32[1024] exponential(x)
  a2 = f32[16] slice(a1), slice={[0:16]}
  b1 = f32[1024] log(x)
  b2 = f32[16] slice(b1), slice={[0:16]}
  c1 = f32[1024] tanh(x)
  c2 = f32[16] slice(c1), slice={[0:16]}
  s = f32[16] add(a2, b2)
  r = f32[16] add(s, c2)
  ROOT t = (f32[16]) tuple(r)"""


def test_greedy_schedule_finishes_branches_before_starting_new_ones() -> None:
    m = module(BRANCHES)
    entry = m.entry
    model = MemoryModel.of(entry)
    bfs_like = [entry.instructions[i] for i in (0, 1, 3, 5, 2, 4, 6, 7, 8, 9)]
    greedy = greedy_schedule(entry, model)
    assert peak_bytes(greedy, model) < peak_bytes(bfs_like, model)
    assert peak_bytes(greedy, model) == 4096 + 2 * 64


def test_schedule_pass_orders_the_entry_and_buffers_follow_it() -> None:
    m = module(BRANCHES)
    Schedule().run(m)
    names = [i.name for i in m.entry.instructions]
    assert names.index("a2") < names.index("b1")
    assignment = assign_buffers(m.entry)
    assert assignment.temp_bytes <= assignment.peak_live_bytes * 1.1


def test_buffer_plan_follows_the_entry_order() -> None:
    """The entry's instruction order is the schedule: reordering it changes the buffer plan."""
    branch_by_branch = module(BRANCHES)
    breadth_first = module(BRANCHES)
    entry = breadth_first.entry
    entry.instructions = [entry.instructions[i] for i in (0, 1, 3, 5, 2, 4, 6, 7, 8, 9)]
    tight, loose = assign_buffers(branch_by_branch.entry), assign_buffers(entry)
    assert [k.name for k in loose.kernels] == ["a1", "b1", "c1", "a2", "b2", "c2", "s", "r"]
    assert tight.temp_bytes == 4096 + 2 * 64 + 64  # one big value at a time, three slices
    assert loose.temp_bytes == 3 * 4096 + 64  # three big values live at once


# DFS order computes p (64 KiB, needed last) before the t0 -> t1 -> q branch with its
# temporaries; the greedy schedule runs that branch first.
LATE_USE = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[128,128] parameter(0)
  y = f32[128,32] parameter(1)
  p = f32[128,128] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t0 = f32[128,32] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t1 = f32[128,128] dot(t0, y), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  zero = f32[] constant(0)
  q = f32[128] reduce(t1, zero), dimensions={1}, to_apply=add
  r = f32[128] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[128]) tuple(r)
}"""


def test_printed_schedule_parses_back_to_the_same_plan() -> None:
    m = parse_module(LATE_USE)
    assert Schedule().run(m)
    names = [i.name for i in m.entry.instructions]
    assert names.index("q") < names.index("p")
    again = parse_module(print_module(m))
    assert [i.name for i in again.entry.instructions] == names
    assert assign_buffers(again.entry).temp_bytes == assign_buffers(m.entry).temp_bytes


def test_disabling_the_schedule_pass_changes_the_object(tmp_path: Path) -> None:
    path = tmp_path / "late_use.hlo"
    path.write_text(LATE_USE)
    scheduled = compile_graph(path).model
    disabled = PipelineOptions(disabled=frozenset({"schedule"}))
    unscheduled = compile_graph(path, passes=disabled).model
    assert scheduled.object_bytes != unscheduled.object_bytes
    assert scheduled.temp_bytes < unscheduled.temp_bytes
    reference = parse_module(LATE_USE)
    args = random_args(reference)
    want = evaluate(reference, args)[0]
    for model in (scheduled, unscheduled):
        (got,) = JitModel.from_compiled(model)(*args)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
