"""The Slurm backend: submitting units as a job array, running one task into its own record file, and
collecting the records into the manifest.
"""
