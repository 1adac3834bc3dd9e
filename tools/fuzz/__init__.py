"""aotc's own fuzzer (``make fuzz``): mutated GraphDefs, bytes, YAML, HLO text and SavedModels.

``mutate`` makes cases from the test fixtures, ``oracle`` runs one case and classifies it
(rejected with an AotcError, compiled and matching the reference evaluator, or a bug: an
internal error, a mismatch, a crash or a hang), ``__main__`` drives worker processes for a set
time and minimizes each new failure into tests/data/fuzz/. ``make test`` runs a fixed, seeded
sample in-process (tests/test_fuzz.py).
"""
