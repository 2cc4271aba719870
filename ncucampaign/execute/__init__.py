"""Stage 3, execution: processes, attempts and their classification and diagnosis, the run directory
(one store for every write), the manifest, provenance, and the executors that run a batch of
invocations (one after another, or in GPU lanes)."""
