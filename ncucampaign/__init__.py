"""ncucampaign: version-controlled Nsight Compute profiling campaigns."""

__version__ = "0.1.0"
