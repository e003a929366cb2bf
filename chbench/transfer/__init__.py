"""Data transfer through client paths: ``chbench ingest`` (insert throughput) and
``chbench read`` (read throughput), each path checked for the data it moved."""
