"""The discovery trace of a shared run: sibling tracers (ncu's, Nsight Systems') behind one contract, tried in
the order of one table (tracers.py), kept in one cache, listed as ncu lists launches (selection.py)."""
