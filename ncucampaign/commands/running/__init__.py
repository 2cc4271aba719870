"""commands/running/: what `run` and the batch task commands share: the run request from the command line, a resume, the
steps around a run, following and collecting batch submissions, and one listed batch task."""
