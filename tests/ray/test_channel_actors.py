"""The direct connection between the front and a host actor, on real actors (``omnienv.ray.channel``).

A front's calls must travel over it (one connection, on the address the actor announced), a
trainer's pool opens none, an actor that cannot be reached is called through Ray instead rather
than failing the episode, and an actor killed mid-call fails only its own sessions and is replaced.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import psutil
import pytest
import ray

from omnienv.core import ToolCall, WorkerLostError
from omnienv.ray import EnvPool, HostPool, RemoteEnv
from tests.net import free_port
from tests.polling import eventually
from tests.ray.channels import run
from tests.ray.conftest import kill


def front_connections(port: int) -> list[psutil._common.pconn]:
    return [
        c
        for c in psutil.Process().net_connections("tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    ]


@pytest.mark.usefixtures("ray_local")
def test_a_fronts_calls_travel_over_the_actors_own_connection_on_loopback(wordle_hosts: HostPool) -> None:
    host = wordle_hosts.hosts[0]
    assert host.channel is not None and host.channel.host == "127.0.0.1" == host.node_ip
    listening = [c for c in psutil.Process(host.pid).net_connections("tcp") if c.status == psutil.CONN_LISTEN]
    assert [(c.laddr.ip, c.laddr.port) for c in listening if c.laddr.port == host.channel.port] == [
        ("127.0.0.1", host.channel.port)
    ]

    async def scenario() -> None:
        env = await RemoteEnv.open(wordle_hosts)
        try:
            assert env.host is not None
            await env.reset(seed=3)
            result = await env.step(ToolCall("guess", {"word": "crane"}))
            assert "guesses left" in result.observation.text
            port = env.host.channel.port if env.host.channel else 0
            assert len(front_connections(port)) == 1  # opened on the first call, and only one
        finally:
            await env.close()

    run(scenario)


@pytest.mark.usefixtures("ray_local")
def test_an_actor_found_unreachable_is_called_through_ray(
    wordle_hosts: HostPool, caplog: pytest.LogCaptureFixture
) -> None:
    for host in wordle_hosts.hosts:  # as behind a firewall: nobody listens where they said
        assert host.channel is not None
        host.channel = replace(host.channel, port=free_port())

    async def scenario() -> None:
        env = await RemoteEnv.open(wordle_hosts)
        try:
            await env.reset(seed=3)
            result = await env.step(ToolCall("guess", {"word": "crane"}))
            assert "guesses left" in result.observation.text
        finally:
            await env.close()

    with caplog.at_level(logging.WARNING, "omnienv.ray"):
        run(scenario)
    assert "calling the actor through Ray instead" in caplog.text
    assert all(host.alive for host in wordle_hosts.hosts)


@pytest.mark.usefixtures("ray_local")
def test_a_trainers_pool_opens_no_connection() -> None:
    with EnvPool("wordle", 2, num_actors=1, actor_options={"num_cpus": 0.5}) as pool:
        host = pool.hosts.hosts[0]
        assert host.channel is None and "channel" not in ray.get(host.actor.info.remote())
        assert [o.text.startswith("Let's play Wordle") for o in pool.reset(seeds=[1, 2])] == [True, True]


@pytest.mark.usefixtures("ray_local")
def test_a_killed_actors_connection_fails_its_sessions_and_it_is_replaced(wordle_hosts: HostPool) -> None:
    async def scenario() -> None:
        envs = [await RemoteEnv.open(wordle_hosts) for _ in range(4)]
        try:
            for env in envs:
                await env.reset(seed=1)
            victim = wordle_hosts.hosts[0]
            kill(victim)
            outcomes = await asyncio.gather(
                *(env.step(ToolCall("guess", {"word": "crane"})) for env in envs), return_exceptions=True
            )
            lost = [o for o in outcomes if isinstance(o, WorkerLostError)]
            assert len(lost) == 1 and "connection to the host actor broke" in victim.death, (outcomes, victim)
            assert wordle_hosts.replaced == 1
            # admitted as soon as it answers, with no placement asking (placing would admit it too)
            deadline = asyncio.get_running_loop().time() + 60
            while len(wordle_hosts.hosts) < 5:
                assert asyncio.get_running_loop().time() < deadline, "the replacement was not admitted"
                await asyncio.sleep(0.01)
            assert wordle_hosts.hosts[-1].alive and wordle_hosts.hosts[-1].channel is not None
        finally:
            for env in envs:
                await env.close()

    run(scenario)
    eventually(lambda: len(wordle_hosts.live) == 4, 60, "the replacement takes sessions")
