"""Processes: spawning an attempt in its own process group, stop requests and signals, log tails. The only room that
imports subprocess."""
