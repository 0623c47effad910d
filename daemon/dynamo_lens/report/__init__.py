"""Renderers of findings for the command line: compiler-style text, JSON v1 and SARIF 2.1.0."""
