"""Dump renderers: text, Graphviz source, and the self-contained HTML drawing."""

from __future__ import annotations

import re

from aotc.hlo.text import parse_module
from aotc.passes.dump import render

FUSED = """
HloModule m
fused_computation {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  m = f32[4] multiply(a, b)
  ROOT e = f32[4] exponential(m)
}
ENTRY main {
  p = f32[4] parameter(0)
  c = f32[4] constant({1, 2, 3, 4})
  big = f32[16] constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
  f = f32[4] fusion(p, c), kind=kLoop, calls=fused_computation
  ROOT r = (f32[4], f32[16]) tuple(f, big)
}
"""


def test_text_dump_elides_large_constants() -> None:
    text = render(parse_module(FUSED), "text")
    assert "big = f32[16]{0} constant({...})" in text
    assert "c = f32[4]{0} constant({1, 2, 3, 4})" in text


def test_dot_dump_has_nodes_edges_and_fusion_clusters() -> None:
    dot = render(parse_module(FUSED), "dot")
    assert dot.startswith('digraph "m" {') and dot.rstrip().endswith("}")
    assert dot.count("[label=") == 9 + 8  # 5 + 4 fused nodes; 8 edges, one dashed
    assert re.search(r'subgraph cluster_c0 \{ label="f: fused_computation"; .*fillcolor', dot)
    assert "style=dashed" in dot and 'label="f32[4]"' in dot


def test_html_dump_is_self_contained_svg() -> None:
    page = render(parse_module(FUSED), "html", title="m: after-fusion")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert not re.search(r"<script|https?://(?!www\.w3\.org/2000/svg)", page)
    assert page.count("<rect") == 9 + 1  # nodes and one cluster
    assert page.count('marker-end="url(#arrow)"') == 8
    assert "fused_computation" in page and "exponential f32[4]" in page
    assert "<title>m: after-fusion</title>" in page
