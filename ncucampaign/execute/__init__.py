"""Stage 3, execution, in rooms (docs/architecture.md): rundir/, process/ (the only subprocess user), attempt/,
trace/, shared/ and backends/; at the top the run context, a unit's run, the executors and doctor."""
