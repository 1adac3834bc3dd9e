"""aotc: an ahead-of-time compiler from TensorFlow graphs to object files and C headers."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # `aotc.compile` (the Python API) loads llvmlite and the compiler on first use, so that
    # `import aotc` and `aotc --version` stay fast.
    if name in ("compile", "CompiledFunction"):
        from aotc import api

        return getattr(api, name)
    raise AttributeError(f"module 'aotc' has no attribute {name!r}")
