"""Stage 2, planning: a validated campaign becomes invocations (matrix expansion, inheritance, implied
options), each invocation its exact ncu argv; lint rules and GPU pinning. Pure: no I/O, no processes."""
