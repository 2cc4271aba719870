"""Stage 3, execution, in rooms (docs/architecture.md): rundir/ (the run directory and its records),
process/ (the only subprocess user), attempt/ (one invocation's attempts), trace/ (the discovery trace
and its tracers), shared/ (shared runs), backends/ (here, or a batch system's tasks). At the top: the
run context, opening a run directory, running a unit, the executors, and doctor.
"""
