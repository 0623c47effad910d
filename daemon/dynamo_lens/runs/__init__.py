"""Findings from the user's real runs: torch's structured trace (``TORCH_TRACE``) read back."""
