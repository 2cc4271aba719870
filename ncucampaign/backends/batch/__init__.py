"""What every batch system shares, named for none: the claims and task records in the run directory,
the listed task a Slurm array task or a pod runs, and collecting the records into the manifest."""
