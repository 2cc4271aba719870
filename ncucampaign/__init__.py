"""ncucampaign: version-controlled Nsight Compute profiling campaigns."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`ncucampaign.load_run(path)`, imported on first use (the command line does not need it)."""
    if name == "load_run":
        from ncucampaign.results.reading.runs import load_run

        return load_run
    raise AttributeError(f"module 'ncucampaign' has no attribute {name!r}")
