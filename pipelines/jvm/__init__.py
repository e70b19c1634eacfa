"""The project's own JVM code: a small jar compiled from the sources here (once, into the jar cache) and loaded by
local sessions. Every use has a plain Spark fallback that gives the same answer, so a session without the jar (a
Spark Connect client, a cluster that was not given it, a machine without `javac`) is slower, never different."""
