"""The discovery trace of a shared run: sibling tracers (ncu's own, Nsight Systems') behind one
contract (contract.py), tried in the order of one table (tracers.py), their traces kept in one cache
(cache.py) and listed as ncu lists launches (selection.py)."""
