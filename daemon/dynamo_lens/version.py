"""The package's version, in a module of its own: the package's ``__init__`` is its entry
points (``%load_ext dynamo_lens``), which sit above everything else."""

__version__ = "0.1.0"
