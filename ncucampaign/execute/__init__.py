"""Stage 3, execution, in rooms (docs/architecture.md):

    rundir/   the run directory: one store for every write, the manifest's records, the record book
    process/  processes: spawning in a group, signals and stop requests, log tails (the only subprocess user)
    attempt/  one invocation's attempts: running ncu, classifying, diagnosing, replay hangs, stall watch
    shared/   shared runs: the trace and its cache, windows, the union run, splits on import
    backends/ where units run: here (local.py), or as a batch system's tasks (batch/, slurm/, k8s/)

and at the top: the run context handed down (context.py), opening a run directory (open_run.py,
prepare.py, provenance.py, resume.py), running a unit (units.py), the executors; doctor.py checks
the machine (with probe_app.py, the counters probe's kernel).
"""
