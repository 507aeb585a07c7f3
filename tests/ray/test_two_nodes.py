"""A real two-node Ray cluster on 127.0.0.1, served by ``omnienv serve --ray ADDRESS``.

Two ``ray start`` nodes (``tests/ray/loopback.py``: own sessions, temp dirs and ports,
token authentication), and the front server as a third process joining them as a Ray driver.
This process never joins the cluster itself: it speaks HTTP to the front, and reads the
processes and their sockets from the kernel. Shown here: the host actors spread over both
nodes; losing the worker node (``SIGKILL`` to its processes) fails only the sessions it
hosted, with ``WORKER_LOST`` and the failure flag, while the head's sessions go on, new
sessions are served and a replacement actor starts on the node that is left; nothing any of
these processes opened listens or connects beyond 127.0.0.1; nothing is left running after.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tests.polling import eventually
from tests.ray.loopback import LoopbackCluster, Socket, die_with_parent, free_port, session_processes

OMNIENV = str(Path(sys.executable).with_name("omnienv"))
GUESS = {"type": "call_tool", "tool_name": "guess", "arguments": {"word": "crane"}}
ACTOR_LINE = re.compile(r"actor (\d+): node ([0-9a-f]+) \(([^)]*)\), pid (\d+)")


class Front:
    """``omnienv serve wordle --ray ADDRESS`` in its own session, output to a file."""

    def __init__(self, cluster: LoopbackCluster, log: Path, env: dict[str, str], *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = [OMNIENV, "serve", "wordle", "--port", str(self.port), "--ray", cluster.address, "--no-ui", *extra]
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def healthy(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the front exited with {self.process.returncode}:\n{self.output()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def __enter__(self) -> Front:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """``SIGINT`` (the server kills its actors and leaves the cluster), ``SIGKILL`` if it hangs."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(30)


@pytest.fixture
def cluster() -> Iterator[LoopbackCluster]:
    with LoopbackCluster() as started:
        started.start()
        yield started
    assert started.leftovers() == [], "Ray processes outlived the test"


def host_actors(cluster: LoopbackCluster, node: str) -> list[int]:
    """The pids of the host actors running among ``node``'s processes."""
    session = cluster.nodes[node].process.pid
    found = []
    for process in cluster.processes():
        try:
            title = " ".join(process.cmdline())  # Ray sets it: ray::InlineEnvHost, or .call_blob while busy
            if os.getsid(process.pid) == session and title.startswith(("ray::EnvHost", "ray::InlineEnvHost")):
                found.append(process.pid)
        except (psutil.Error, ProcessLookupError):
            continue
    return found


@pytest.mark.slow  # about 30 s: two Ray nodes and a front server start, on two cores
def test_sessions_spread_over_two_nodes_and_losing_one_fails_only_its_sessions(
    cluster: LoopbackCluster, tmp_path: Path
) -> None:
    tokenless = {k: v for k, v in cluster.environment().items() if not k.startswith("RAY_AUTH")}
    # Every socket of the nodes and of the two fronts below is sampled from here to the end.
    with cluster.watch() as watch:
        with (
            # No token, no joining: this front refuses to start and says how to pass the token.
            Front(cluster, tmp_path / "refused.log", {**tokenless, "RAY_py_gcs_connect_timeout_s": "2"}) as refused,
            # This one joins with the token. Nothing tells it to stay on loopback but the address
            # it is given: omnienv.ray.connect pins a driver that joins a loopback address.
            Front(
                cluster, tmp_path / "front.log", cluster.environment(), "--ray-actors", "2", "--ray-cpus", "0.5"
            ) as front,
        ):
            watch.follow(refused.process.pid, front.process.pid)
            play_through_the_loss_of_a_node(cluster, front)
            refused.process.wait(60)
            assert refused.process.returncode == 2, refused.output()
            assert "cannot join the Ray cluster" in refused.output() and "RAY_AUTH_MODE=token" in refused.output()
    assert front.process.returncode in (0, 130), front.output()[-3000:]
    assert session_processes(front.process.pid) == session_processes(refused.process.pid) == []
    # Nothing any of them started listened on or connected to anything but 127.0.0.1, over the
    # whole test: the nodes, their raylets, agents and workers, the front (a Ray driver), the
    # refused driver. And the watch saw them: the GCS listening, the front connected to it.
    assert watch.foreign == [], watch.foreign
    assert watch.samples > 10, watch.samples
    gcs = cluster.gcs_port
    assert any(s.status == "LISTEN" and s.local and s.local[1] == gcs for s in watch.seen)
    assert any(s.pid == front.process.pid and s.remote and s.remote[1] == gcs for s in watch.seen)


def play_through_the_loss_of_a_node(cluster: LoopbackCluster, front: Front) -> None:
    eventually(front.healthy, 90, "the front is healthy")
    actors = {int(m[0]): (m[1], m[2], int(m[3])) for m in ACTOR_LINE.findall(front.output())}
    assert "2 Ray actor(s) in a cluster of 2 node(s)" in front.output(), front.output()
    assert len(actors) == 2 and all(ip == "127.0.0.1" for _, ip, _ in actors.values()), actors
    assert len({node for node, _, _ in actors.values()}) == 2, f"both actors on one node: {actors}"
    on = {name: host_actors(cluster, name) for name in ("head", "worker")}
    assert len(on["head"]) == len(on["worker"]) == 1, on  # one actor among each node's processes
    worker_actor = next(i for i, (_, _, pid) in actors.items() if pid in on["worker"])
    head_node = next(node for node, _, pid in actors.values() if pid in on["head"])

    with httpx.Client(base_url=front.url, timeout=30) as http:
        ids = [http.post("/sessions").json()["session_id"] for _ in range(8)]
        for seed, sid in enumerate(ids):
            assert http.post(f"/sessions/{sid}/reset", json={"seed": seed}).json()["type"] == "observation"
            assert http.post(f"/sessions/{sid}/step", json=GUESS).json()["type"] == "observation"
        # least loaded first: sessions alternate between the two actors, so half are on each node
        doomed = {sid for n, sid in enumerate(ids) if n % 2 == worker_actor}

        cluster.kill("worker")  # the node is gone at once, its actor with it

        replies = {sid: http.post(f"/sessions/{sid}/step", json=GUESS).json() for sid in ids}
        failed = {sid for sid, reply in replies.items() if reply["type"] == "error"}
        assert failed == doomed, replies
        error = replies[min(doomed)]["data"]
        assert error["code"] == "WORKER_LOST" and "died" in error["message"], error
        state = http.get(f"/sessions/{min(doomed)}/state").json()["data"]
        assert state["failure"]["kind"] == "worker_lost" and state["truncated"] is True, state
        for sid in set(ids) - doomed:  # the head's sessions go on
            assert http.post(f"/sessions/{sid}/step", json=GUESS).json()["type"] == "observation"

        # new sessions are served, and the lost node's actor is replaced on the node left
        fresh = [http.post("/sessions").json()["session_id"] for _ in range(4)]
        for sid in fresh:
            assert http.post(f"/sessions/{sid}/reset", json={"seed": 7}).json()["type"] == "observation"
            assert http.post(f"/sessions/{sid}/step", json=GUESS).json()["type"] == "observation"
        eventually(lambda: len(host_actors(cluster, "head")) == 2, 60, "a replacement actor runs on the head")

        def replacement_joined() -> bool:
            http.delete(f"/sessions/{http.post('/sessions').json()['session_id']}")  # placing admits it
            # the front sees the connection break before Ray sees the node die, so its first
            # replacement may be sent to the dying node, die there and be replaced in turn
            return re.search(rf"replacement actor \d+: node {head_node[:12]}", front.output()) is not None

        eventually(replacement_joined, 60, "the replacement takes sessions")
        again = min(doomed)  # a failed session starts over on a live actor
        assert http.post(f"/sessions/{again}/reset", json={"seed": 9}).json()["type"] == "observation"
        assert http.post(f"/sessions/{again}/step", json=GUESS).json()["type"] == "observation"
        for sid in ids + fresh:
            http.delete(f"/sessions/{sid}")


def test_the_socket_check_tells_loopback_from_anything_else() -> None:
    assert Socket(1, "tcp", "LISTEN", ("127.0.0.1", 6379), None).loopback
    assert Socket(1, "tcp", "ESTABLISHED", ("::ffff:127.0.0.1", 5), ("::ffff:127.0.0.1", 6)).loopback
    assert not Socket(1, "tcp", "LISTEN", ("0.0.0.0", 6379), None).loopback  # every interface
    assert not Socket(1, "tcp", "LISTEN", ("::", 6379), None).loopback
    assert not Socket(1, "tcp", "SYN_SENT", ("127.0.0.1", 5), ("192.0.2.2", 6379)).loopback  # the machine's own
    assert not Socket(1, "udp", "NONE", ("192.0.2.2", 5), None).loopback
