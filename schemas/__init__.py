"""Table schemas (Spark StructTypes) and the pydantic models of the rows people and tools consume."""
