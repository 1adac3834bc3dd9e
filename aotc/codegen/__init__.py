"""Code generation: HLO -> LLVM IR (llvmlite) -> object file + C header."""

from aotc.codegen.compile import CompiledModel, compile_module
from aotc.codegen.interface import TensorInfo
from aotc.codegen.target import TargetSpec

__all__ = ["CompiledModel", "TargetSpec", "TensorInfo", "compile_module"]
