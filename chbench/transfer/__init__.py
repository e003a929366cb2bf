"""Data transfer through client paths: ``chbench ingest`` (insert throughput) and
``chbench read`` (read throughput), each path checked for the data it moved."""

# a path the run stopped before (Ctrl-C, a lost server): in the file with this status,
# not left out as if never asked for
NOT_REACHED = "not reached"
NOT_REACHED_WHY = "the run stopped before it"
