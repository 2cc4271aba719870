"""Where a run's units run: here (local.py), or as the tasks of a batch system: what every batch system shares is
batch/, and each system is one folder beside it (slurm/, k8s/) and one line in systems.BATCH_SYSTEMS."""
