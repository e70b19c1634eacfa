"""The benchmark of issue #4: parse and pipeline throughput, scaling, latency and driver memory, each figure a ratio
to a baseline measured in the same run on the same machine (`python -m bench`)."""
