"""The Kubernetes backend: a run's units as one Indexed Job (submit.py), the API calls (api.py), and
a pod's side (task.py); pods claim and record as Slurm tasks do (execute/slurm/files.py)."""
