"""Facts of the generated C ABI, shared by scheduling, buffer assignment, kernels and header."""

#: Alignment in bytes of the caller's temp buffer, of every offset in it, and of constants:
#: a cache line, and the width of the widest vector loads (AVX-512).
ALIGN = 64
