"""Discovery: one cheap ncu pass through the normal execution stage, then which kernels ran and
paste-ready targets. Built on all four stages."""
