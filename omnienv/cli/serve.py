"""``omnienv serve ENV``: serve an environment over OpenEnv's ``/ws`` and HTTP sessions."""

from __future__ import annotations

import secrets
import signal
import time
from functools import partial
from typing import TYPE_CHECKING, Annotated

import typer

from omnienv.cli.common import console, env_class, errors, fail, loaded, log_level_option, port_option
from omnienv.server.config import IDLE_TIMEOUT, MAX_SESSIONS, STEP_TIMEOUT, WORKER_STALL_TIMEOUT, needs_server_extra

if TYPE_CHECKING:
    from omnienv.server import ServerConfig


def serve(
    env: Annotated[
        str | None, typer.Argument(help="Environment name, catalog name, 'package.module:Class' or task folder")
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(help="Serve an image made by omnienv build instead: its container on 127.0.0.1:PORT"),
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, port_option()] = 8000,
    max_sessions: Annotated[
        int, typer.Option(help="Sessions open at once, all workers together (each holds its share); more are refused")
    ] = MAX_SESSIONS,
    workers: Annotated[
        int,
        typer.Option(
            help="Worker processes on the one port (one per core: --workers $(nproc)); each session lives on "
            "one worker, and requests naming it are routed there, on every transport"
        ),
    ] = 1,
    worker_stall_timeout: Annotated[
        float,
        typer.Option(
            help="With --workers: stop the server (exit 1) when a worker's event loop has not answered for this "
            "long, in s, killing that worker, rather than let its sessions and its share of new connections "
            "hang (0: never)"
        ),
    ] = WORKER_STALL_TIMEOUT,
    idle_timeout: Annotated[float, typer.Option(help="Close sessions idle this long, in s (0: never)")] = IDLE_TIMEOUT,
    step_timeout: Annotated[float, typer.Option(help="Fail a step running this long, in s (0: never)")] = STEP_TIMEOUT,
    log_level: Annotated[str, log_level_option()] = "warning",
    ui: Annotated[bool, typer.Option("--ui/--no-ui", help="Serve the play page at /ui")] = True,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Host sessions on Ray actors: 'auto' joins this node's cluster, host:port or ray://... another, "
            "'local' starts a private Ray on 127.0.0.1",
        ),
    ] = None,
    ray_actors: Annotated[int, typer.Option(help="Ray host actors, many sessions each (0: one per CPU)")] = 0,
    ray_cpus: Annotated[
        float | None,
        typer.Option(help="CPUs each Ray host actor asks for [default: the environment's ray_options, else 1]"),
    ] = None,
    ray_direct: Annotated[
        bool,
        typer.Option(
            "--ray-direct/--ray-calls",
            help="Send session calls to the Ray host actors over their own connections (each listens on its "
            "node's Ray address), or through Ray's actor calls (slower; no port beyond Ray's own)",
        ),
    ] = True,
    agent_only: Annotated[
        bool,
        typer.Option(
            "--agent-only",
            help="Agents get only MCP tools; reset/step/state are refused; episodes start "
            "at POST /operator/sessions with the printed token",
        ),
    ] = False,
    operator_token: Annotated[
        str | None,
        typer.Option(
            envvar="OMNIENV_OPERATOR_TOKEN",
            help="Bearer token of /operator (--agent-only); default: a random one",
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="NAME[:PORT]",
            help="Also answer requests whose Host is NAME (repeatable; '*': any). Loopback names and the bound "
            "host are always answered; binding 0.0.0.0 needs the names clients use",
        ),
    ] = None,
    nemo_gym: Annotated[
        bool,
        typer.Option(
            "--nemo-gym",
            help="Serve NeMo Gym's resources-server routes alone, for its own agents: simple_agent's "
            "(/seed_session, a POST per tool, /verify) and gymnasium_agent's (/reset, /step, /close)",
        ),
    ] = False,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            metavar="ORIGIN",
            help="Also let web pages from ORIGIN (scheme://host[:port]) call the server (repeatable; '*': any). "
            "Loopback origins are always allowed; other browser origins are refused",
        ),
    ] = None,
) -> None:
    """Serve ENV until interrupted: OpenEnv-compatible WebSocket /ws, HTTP sessions, /health."""
    try:
        from omnienv.server.supervisor import check_workers

        check_workers(workers)
    except ImportError as exc:
        raise fail(needs_server_extra(exc)) from None
    except ValueError as exc:
        raise fail(str(exc)) from None
    if image is not None:
        if env is not None:
            raise fail("pass ENV or --image IMAGE, not both (an image serves the environment it was built for)")
        if ray is not None or nemo_gym:
            raise fail("--image serves the image's own server on this machine: drop --ray and --nemo-gym")
        forwarded = ["--max-sessions", str(max_sessions), "--idle-timeout", str(idle_timeout)]
        forwarded += ["--step-timeout", str(step_timeout), "--log-level", log_level]
        forwarded += ["--agent-only"] * agent_only + [f"--allow-origin={o}" for o in allow_origin or ()]
        forwarded += ["--workers", str(workers)] if workers > 1 else []
        forwarded += (  # only when set: an image of an older omnienv knows no such option
            ["--worker-stall-timeout", str(worker_stall_timeout)]
            if workers > 1 and worker_stall_timeout != WORKER_STALL_TIMEOUT
            else []
        )
        token = (operator_token or secrets.token_urlsafe(24)) if agent_only else None
        loaded()
        if token is not None:
            console.print(f"agent-only: start episodes with POST /operator/sessions, 'Authorization: Bearer {token}'")
        _serve_image(image, port, forwarded, {"OMNIENV_OPERATOR_TOKEN": token} if token else {})
        return
    if env is None:
        raise fail("name the environment to serve (omnienv list shows them), or pass --image IMAGE")
    cls = env_class(env)
    try:
        from omnienv.app import create_app
        from omnienv.server import ServerConfig
        from omnienv.server import serve as run
    except ImportError as exc:
        raise fail(needs_server_extra(exc)) from None
    try:
        config = ServerConfig(
            max_sessions=max_sessions,
            idle_timeout=idle_timeout or None,
            step_timeout=step_timeout or None,
            worker_stall_timeout=worker_stall_timeout or None,
            ui=ui,
            agent_only=agent_only,
            operator_token=(operator_token or secrets.token_urlsafe(24)) if agent_only else None,
            allow_hosts=tuple(allow_host or ()),
            allow_origins=tuple(allow_origin or ()),
        )
        check_workers(workers, config)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if workers > 1:
        if ray is not None or nemo_gym:
            raise fail("--workers runs the whole server in several processes here: drop --ray or --nemo-gym")
        _serve_workers(env, cls.name, config, host, port, workers, allow_host, log_level)
        return
    announce = partial(_announce, cls.name, config, host, allow_host=allow_host, nemo_gym=nemo_gym)
    if nemo_gym:
        if ray is not None or agent_only:
            raise fail("--nemo-gym serves NeMo Gym's routes alone, on this process: drop --ray and --agent-only")
        try:
            from omnienv.dialects.nemo_gym_gymnasium import nemo_gym_app

            app = nemo_gym_app(cls, config)
        except ImportError as exc:  # a dialect's own dependency (NeMo Gym's signed cookie: itsdangerous)
            raise fail(needs_server_extra(exc)) from None
        loaded()
        run(app, host, port, log_level=log_level, after_start=announce)
        return
    if ray is not None:
        try:
            from omnienv.ray.serving import serve_on_ray
        except ImportError as exc:
            raise fail(f"--ray needs the ray extra: pip install 'omnienv[ray]' ({exc})") from None
        options = {} if ray_cpus is None else {"num_cpus": ray_cpus}  # else the class's ray_options, or 1
        announce(port)
        loaded()
        try:
            serve_on_ray(
                cls,
                config,
                host,
                port,
                address=ray,
                actors=ray_actors or None,
                actor_options=options,
                direct=ray_direct,
                announce=console.print,
                log_level=log_level,
            )
        except (ConnectionError, TimeoutError) as exc:
            raise fail(str(exc)) from None
        return
    try:
        app = create_app(cls, config)
    except ImportError as exc:  # the routes' own dependencies are imported as the app is assembled
        raise fail(needs_server_extra(exc)) from None
    loaded()
    run(app, host, port, log_level=log_level, after_start=announce)  # announced once it answers: see _announce


def _announce(
    name: str, config: ServerConfig, host: str, port: int, allow_host: list[str] | None, *, nemo_gym: bool = False
) -> None:
    """Say where the server answers. A single server says so once it does, from uvicorn's
    warm-up thread: rich is imported here, and start-up is timed until the first answer.
    ``nemo_gym``: NeMo Gym's routes alone, so no /ws and no play page to name."""
    from omnienv.server.origins import WILDCARDS

    if nemo_gym:
        console.print(f"serving [bold]{name}[/] on http://{host}:{port}: NeMo Gym's resources-server routes alone")
        console.print(f"NeMo Gym resources server: point its agents at http://{host}:{port}", soft_wrap=True)
    else:
        page = f", play it at http://{host}:{port}/ui/" if config.ui else ""
        console.print(f"serving [bold]{name}[/] on http://{host}:{port} (WebSocket: ws://{host}:{port}/ws{page})")
    if host.strip().lower() in WILDCARDS and not allow_host:
        console.print(
            f"[yellow]bound to {host}: requests are answered only when their Host is a loopback name; "
            "pass --allow-host NAME for each name or address clients use to reach this machine[/]",
            soft_wrap=True,
        )
    if config.agent_only:
        console.print(
            f"agent-only: agents use MCP at http://{host}:{port}/mcp?session_id=...; start episodes "
            f"with POST /operator/sessions, header 'Authorization: Bearer {config.operator_token}'",
            soft_wrap=True,
        )


def _serve_workers(
    env: str,
    name: str,
    config: ServerConfig,
    host: str,
    port: int,
    workers: int,
    allow_host: list[str] | None,
    log_level: str,
) -> None:
    """``--workers N``: bind here (so ``--port 0`` names the port it got), then supervise N workers."""
    from omnienv.app import create_app
    from omnienv.core.errors import WorkerLostError
    from omnienv.server.supervisor import bind, serve_workers

    try:
        sock = bind(host, port)
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc}") from None
    try:
        _announce(name, config, host, sock.getsockname()[1], allow_host)
        console.print(f"{workers} workers, {config.max_sessions} sessions at most in all", soft_wrap=True)
        loaded()
        serve_workers(partial(create_app, env), config, sock, workers, log_level=log_level)
    except WorkerLostError as exc:
        errors.print(f"[bold red]error:[/] {exc.message}", markup=True, highlight=False)
        raise typer.Exit(1) from None
    finally:
        sock.close()


def _serve_image(image: str, port: int, options: list[str], variables: dict[str, str]) -> None:
    """Run ``image``'s container on 127.0.0.1:``port`` until interrupted, then stop and remove it."""
    try:
        from omnienv.client.container import ContainerError, start_container
    except ImportError as exc:
        raise fail(f"serving an image needs the server extra: pip install 'omnienv[server,deploy]' ({exc})") from None
    # a process manager's stop (SIGTERM) removes the container too, even one still starting
    previous = signal.signal(signal.SIGTERM, _interrupt)
    container = None
    try:
        with console.status(f"starting a container of {image}..."):
            container = start_container(image, port=port, env=variables, server_options=options)
        console.print(f"serving the image [bold]{image}[/] on {container.url} (WebSocket: ws://127.0.0.1:{port}/ws)")
        while container.running():  # polled, not a blocking wait: a signal is seen within a second
            time.sleep(0.5)
        console.print(f"the container exited:\n{container.logs()}", markup=False)
    except ContainerError as exc:
        raise fail(exc.message) from None
    except KeyboardInterrupt:
        pass  # a container still starting was removed by start_container
    finally:
        if container is not None:
            with console.status("stopping the container..."):
                container.stop()
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
