"""The worker process: the only place user code and torch run."""
