"""General-capability suites run on every checkpoint, to catch what narrow training breaks."""
