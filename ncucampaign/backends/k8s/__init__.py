"""The Kubernetes backend: the API, the Indexed Job, and where a pod runs (its retries take over
its own index's claims)."""
