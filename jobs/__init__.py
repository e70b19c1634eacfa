"""Thin entry points: parse arguments, build the configuration, call the pipeline's `run` functions."""
