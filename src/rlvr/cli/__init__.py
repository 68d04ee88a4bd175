"""The `rlvr` command line: one module per command; each only parses arguments and calls the library."""
