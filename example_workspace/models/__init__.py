"""Example models for Dynamo Lens (imported with the workspace root on sys.path)."""
