"""One module per command, listed once here. A command module has ``NAME``, ``HELP``,
``DESCRIPTION``, optionally ``EPILOG`` (or ``epilog()``, computed when help is asked
for) and ``PARSER`` (extra argparse options), ``add_arguments(parser)`` and
``run(args) -> exit code``; ``settings_from(rest, parser)`` if it takes unknown
``--name=value`` flags as ClickHouse settings. A command turns its arguments into typed
options and calls library code; it holds no measuring or statistics of its own."""

COMMANDS = ("run", "load", "compare", "explain", "upgrade", "trend", "bisect", "history", "capture", "replay",
            "clickbench", "ingest", "read", "report", "engines")
