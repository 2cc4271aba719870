"""Sharing one application run among targets, as pure planning: groups, their cost, their union
and window, the partition of a trace pool, launch records, and the text `plan` prints."""
