"""What writing a build context must never do: delete a folder omnienv did not write, carry the
author's secrets or a host file into a (public by default) Space, or let a folder's name run as a
command in the generated entry script. Real folders on disk, real written contexts, no Docker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from omnienv.deploy import DeployError, ImagePlan, plan_image, write_context
from omnienv.deploy.context import entrypoint
from omnienv.envs.terminal.env import SUITE


@pytest.fixture(scope="module")
def wordle() -> ImagePlan:
    return plan_image("wordle")


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def test_a_folder_holding_a_dockerfile_is_not_a_context_and_keeps_its_files(tmp_path: Path, wordle: ImagePlan) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "Dockerfile").write_text("FROM python:3.11\n")
    (project / "src" / "main.py").write_text("months of work\n")
    with pytest.raises(DeployError, match=r"not a build context .* pass an empty or new folder"):
        write_context(wordle, project)
    assert _files(project) == {"Dockerfile", "src/main.py"}


def test_a_context_omnienv_wrote_is_cleared_and_rewritten(tmp_path: Path, wordle: ImagePlan) -> None:
    context = write_context(wordle, tmp_path / "context")
    assert (context / ".omnienv-context").is_file()
    (context / "stale.txt").write_text("from an earlier write")
    write_context(wordle, context)
    assert not (context / "stale.txt").exists() and (context / "Dockerfile").is_file()


def test_the_working_folder_is_never_cleared(
    tmp_path: Path, wordle: ImagePlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = write_context(wordle, tmp_path / "context")
    (context / "inside").mkdir()
    for here in (context, context / "inside"):
        monkeypatch.chdir(here)
        with pytest.raises(DeployError, match="working folder or holds it"):
            write_context(wordle, context)
    assert (context / "inside").is_dir() and (context / "Dockerfile").is_file()


def _project(root: Path) -> Path:
    """An author's project as it sits on a laptop: code, and what must never leave it."""
    project = root / "my-env"
    (project / "my_env").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "my-env"\nversion = "0.1"\n')
    (project / "my_env" / "__init__.py").write_text("")
    (project / "my_env" / "words.txt").write_text("crane\n")
    (project / ".env").write_text("HF_TOKEN=hf_SECRET\n")
    (project / ".env.local").write_text("OPENAI_API_KEY=sk-SECRET\n")
    (project / ".netrc").write_text("machine huggingface.co password hf_SECRET\n")
    (project / "deploy.pem").write_text("KEY\n")
    (project / "id_ed25519").write_text("KEY\n")
    (project / "tools" / "lib").mkdir(parents=True)
    (project / "tools" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtualenv named tools/
    (project / "tools" / "lib" / "site.py").write_text("")
    (project / ".gitignore").write_text("*.jsonl\nscratch/\n")
    (project / "results.jsonl").write_text('{"private": "eval data"}\n')
    (project / "scratch").mkdir()
    (project / "scratch" / "notes.md").write_text("notes\n")
    return project


_KEPT = {"pyproject.toml", ".gitignore", "my_env/__init__.py", "my_env/words.txt"}


def _copied(plan: ImagePlan, project: Path, out: Path) -> set[str]:
    context = write_context(replace(plan, app=((project, "my-env"),)), out)
    return _files(context / "app" / "my-env")


@pytest.mark.parametrize("checkout", [False, True], ids=["plain-folder", "git-checkout"])
def test_a_bundle_leaves_out_secrets_virtualenvs_and_what_gitignore_ignores(
    tmp_path: Path, wordle: ImagePlan, checkout: bool
) -> None:
    project = _project(tmp_path)
    if checkout:
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        (project / ".git" / "info" / "exclude").write_text("local-only.txt\n")
        (project / "local-only.txt").write_text("mine\n")
    assert _copied(wordle, project, tmp_path / "context") == _KEPT


def test_a_folder_that_its_checkout_ignores_whole_still_applies_its_own_gitignore(
    tmp_path: Path, wordle: ImagePlan
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("downloads/\n")
    project = _project(tmp_path / "downloads")
    assert _copied(wordle, project, tmp_path / "context") == _KEPT


def test_the_dockerignore_keeps_the_same_names_out_but_not_the_ca_bundle(tmp_path: Path, wordle: ImagePlan) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("CA\n")
    context = write_context(replace(wordle, ca_cert=ca), tmp_path / "context")
    lines = (context / ".dockerignore").read_text().splitlines()
    assert {"**/.env", "**/.env.*", "**/.netrc", "**/*.pem", "**/id_rsa*", ".omnienv-context"} <= set(lines)
    assert lines[-1] == "!build-ca.pem" and (context / "build-ca.pem").read_text() == "CA\n"


def test_a_link_to_a_host_file_is_refused_and_named(tmp_path: Path, wordle: ImagePlan) -> None:
    secret = tmp_path / "home" / ".ssh" / "key"
    secret.parent.mkdir(parents=True)
    secret.write_text("HOST-SECRET\n")
    project = _project(tmp_path)
    (project / "shared").mkdir()
    os.symlink(secret, project / "shared" / "notes.md")
    with pytest.raises(DeployError, match=r"shared/notes\.md links outside .* replace the link"):
        _copied(wordle, project, tmp_path / "context")
    context = tmp_path / "context"
    assert not [p for p in context.rglob("*") if p.is_file() and b"HOST-SECRET" in p.read_bytes()]


def test_links_inside_the_folder_stay_relative_links(tmp_path: Path, wordle: ImagePlan) -> None:
    project = _project(tmp_path)
    os.symlink(project / "my_env", project / "alias")  # absolute, into the project
    os.symlink("../words.txt", project / "my_env" / "up")  # dangles here: stays a link all the same
    context = write_context(replace(wordle, app=((project, "my-env"),)), tmp_path / "context")
    copied = context / "app" / "my-env"
    assert os.readlink(copied / "alias") == "my_env" and (copied / "alias" / "words.txt").read_text() == "crane\n"
    assert os.readlink(copied / "my_env" / "up") == "../words.txt"


def test_a_suites_name_is_a_name_in_the_entry_script_not_a_command(tmp_path: Path) -> None:
    suite = tmp_path / "tasks$(touch PWNED)`touch PWNED2`'x"
    name = next(p.name for p in SUITE.iterdir() if p.is_dir() and not p.name.startswith("_"))
    shutil.copytree(SUITE / name, suite / name)
    plan = plan_image(str(suite))
    assert plan.env == "/opt/omnienv/app/tasks/tasks-touch-PWNED-touch-PWNED2-x"
    context = write_context(plan, tmp_path / "context")
    assert (context / "app" / "tasks" / "tasks-touch-PWNED-touch-PWNED2-x" / name / "task.toml").is_file()
    script = (context / "entrypoint.sh").read_text()
    assert 'served="$here"/app/tasks/tasks-touch-PWNED-touch-PWNED2-x\n' in script
    run = tmp_path / "run"
    run.mkdir()
    done = subprocess.run(  # the entry script as a person runs it; its python only prints what it is given
        ["sh", str(context / "entrypoint.sh")],
        env={"PATH": os.environ["PATH"], "PYTHON": _echo_python(tmp_path)},
        cwd=run,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and not list(run.iterdir()), done.stderr
    assert done.stdout.splitlines()[2] == f"{context}/app/tasks/tasks-touch-PWNED-touch-PWNED2-x"


def _echo_python(folder: Path) -> str:
    """A stand-in for python that prints its arguments, one a line (the server itself is not the point)."""
    echo = folder / "echo-python"
    echo.write_text(f"#!{sys.executable}\nimport sys\nprint(*sys.argv[1:], sep='\\n')\n")
    echo.chmod(0o755)
    return str(echo)


def test_every_value_in_the_entry_script_and_dockerfile_is_quoted(tmp_path: Path, wordle: ImagePlan) -> None:
    hostile = replace(
        wordle, name="w\nRUN touch /PWNED", env="m:C'$(id)", variables=(("OMNIENV_ALLOW_HOST", "a$HOME"),)
    )
    assert "served='m:C'\"'\"'$(id)'\n" in entrypoint(hostile)
    assert "\nRUN touch" not in entrypoint(hostile)
    with pytest.raises(DeployError, match="control character"):
        write_context(hostile, tmp_path / "context")
    dockerfile = (write_context(replace(hostile, name="w"), tmp_path / "context") / "Dockerfile").read_text()
    assert 'ENV OMNIENV_ALLOW_HOST="a\\$HOME"\n' in dockerfile


def test_a_ca_bundle_must_be_there_and_hold_a_pem_certificate(tmp_path: Path) -> None:
    with pytest.raises(DeployError, match="no CA bundle at"):
        plan_image("wordle", ca_cert=tmp_path / "missing.pem")
    (tmp_path / "key.txt").write_text("not a certificate\n")
    with pytest.raises(DeployError, match="holds no PEM certificate"):
        plan_image("wordle", ca_cert=tmp_path / "key.txt")
