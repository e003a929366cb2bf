"""The messages that cross process and network boundaries (chbench/messages.py)."""

from __future__ import annotations

import json

import pytest

from chbench import messages


def test_every_kind_goes_through_json_and_back():
    for cls in (*messages.DOWN, *messages.UP, messages.Hello):
        sent = cls()
        got = messages.read(json.loads(json.dumps(sent.wire())))
        assert type(got) is cls and got == sent


def test_a_job_keeps_its_fields_and_a_done_is_measured():
    job = messages.Job(job=3, index=1, of=2, config={"rate": 10.0}, settings=[{"readonly": "1"}])
    assert messages.read(job.wire()) == job
    done = messages.read(messages.Done(job=3, stats=[[0, 0, {}]], status={"started": 5}).wire())
    assert isinstance(done, messages.Measured) and isinstance(done, messages.Done) and done.status == {"started": 5}


def test_another_version_or_a_stranger_is_one_clear_error():
    wire = messages.Go(job=1).wire()
    with pytest.raises(messages.ProtocolError, match="protocol version 2 .*same chbench version"):
        messages.read({**wire, "v": 2})
    with pytest.raises(messages.ProtocolError, match="unknown kind"):
        messages.read({**wire, "kind": "chbench_nope"})
    with pytest.raises(messages.ProtocolError, match="version None"):
        messages.read({"type": "go"})  # the line an older chbench wrote
