"""Jobs as the API, the CLI and the pages show them: documents, listings, the feed, sweeps, compare, system."""
