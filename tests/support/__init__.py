"""Helpers shared by test files (never collected as tests)."""
