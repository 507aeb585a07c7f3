"""omnienv.sandboxes.polling: select's answers, for descriptors past select's limit of 1024."""

from __future__ import annotations

import contextlib
import os
import resource
import select
import socket
from collections.abc import Iterator

import pytest

from omnienv.sandboxes.polling import SelectOnPoll, wait

HIGH = 1500


@pytest.fixture
def high_pipe() -> Iterator[tuple[int, int]]:
    """A pipe whose ends are numbered above FD_SETSIZE, as in a process holding many sessions."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= HIGH + 1:
        pytest.skip(f"the open-file limit ({hard}) is too low for descriptor {HIGH}")
    if soft <= HIGH + 1:
        resource.setrlimit(resource.RLIMIT_NOFILE, (HIGH + 2, hard))
    read_end, write_end = os.pipe()
    os.dup2(read_end, HIGH)
    os.dup2(write_end, HIGH + 1)
    os.close(read_end)
    os.close(write_end)
    try:
        yield HIGH, HIGH + 1
    finally:
        for fd in (HIGH, HIGH + 1):
            with contextlib.suppress(OSError):
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_select_refuses_what_wait_watches(high_pipe: tuple[int, int]) -> None:
    read_end, write_end = high_pipe
    with pytest.raises(ValueError, match="out of range"):
        select.select([read_end], [], [], 0)
    assert wait([read_end], [write_end], 0) == ([], [write_end])


def test_readable_after_a_write_and_at_end_of_file(high_pipe: tuple[int, int]) -> None:
    read_end, write_end = high_pipe
    assert wait([read_end], (), 0.01) == ([], [])  # nothing yet: the timeout passes
    os.write(write_end, b"x")
    assert wait([read_end], (), None) == ([read_end], [])
    assert os.read(read_end, 1) == b"x"
    os.close(write_end)
    assert wait([read_end], (), 1.0) == ([read_end], [])  # hung up: ready, and the read says so
    assert os.read(read_end, 1) == b""


def test_a_writer_whose_reader_is_gone_is_ready(high_pipe: tuple[int, int]) -> None:
    read_end, write_end = high_pipe
    os.close(read_end)
    assert wait((), [write_end], 1.0) == ([], [write_end])  # the write that follows fails (EPIPE)


def test_one_descriptor_both_ways() -> None:
    left, right = socket.socketpair()
    with left, right:
        right.send(b"x")
        assert wait([left.fileno()], [left.fileno()], 1.0) == ([left.fileno()], [left.fileno()])


def test_select_on_poll_answers_as_the_select_module_does(high_pipe: tuple[int, int]) -> None:
    """python-xlib calls ``select.select`` with its socket and catches ``select.error``."""
    read_end, write_end = high_pipe
    left, right = socket.socketpair()
    with left, right:
        assert SelectOnPoll.select([read_end, left], [write_end, right], [], 0) == ([], [write_end, right], [])
        right.send(b"x")
        os.write(write_end, b"y")
        assert SelectOnPoll.select([left, read_end], [], [], None) == ([left, read_end], [], [])
    assert SelectOnPoll.error is select.error
