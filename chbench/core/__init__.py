"""The one execution core: the lanes every concurrent timed sender runs on (``lanes.py``)."""
