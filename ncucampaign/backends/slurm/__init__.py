"""The Slurm backend: sbatch and squeue, and where an array task runs."""
