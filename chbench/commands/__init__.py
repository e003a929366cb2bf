"""One module per command: turns parsed arguments into a plan or a comparison."""
