"""One invocation's attempts: running ncu with retries, classifying and diagnosing each attempt, replay hangs and the
stall watch, checks against the installed ncu."""
