"""The trace cache: traces kept by key (store), the key from the workload (workload, packages), and what is kept
beside a trace (side_file, kept_misses)."""
