"""Dynamo Lens: torch.compile graph breaks, recompile risks, equivalence and timings."""

__version__ = "0.1.0"
