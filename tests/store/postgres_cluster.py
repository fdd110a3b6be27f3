"""A private PostgreSQL cluster for tests: Debian's server binaries, `initdb` into a temporary
directory, `pg_ctl start` on a free loopback port, stopped and removed afterwards.

PostgreSQL refuses to run as root; as root the cluster is created and run as the `postgres`
user (Debian's package creates it) through `runuser`, in a directory that user owns.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from stickyd.cli.child_service import free_port

SERVER_USER = "postgres"
DATABASE_USER = "stickyd"


def server_bin() -> Path | None:
    """The newest installed PostgreSQL server's bin directory, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


@dataclass(frozen=True)
class PostgresCluster:
    url: str
    """postgresql://stickyd@127.0.0.1:PORT/postgres (trust authentication on loopback)."""
    port: int
    data_dir: Path

    def create_database(self, name: str) -> str:
        """A fresh database in this cluster; its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + f"/{name}"


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", SERVER_USER, "--", *command] if os.geteuid() == 0 else command


@contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    bin_dir = server_bin()
    if bin_dir is None:
        raise RuntimeError(
            "PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)"
        )
    root = Path(tempfile.mkdtemp(prefix="stickyd-pg-"))
    data_dir, socket_dir = root / "data", root / "socket"
    socket_dir.mkdir()
    if os.geteuid() == 0:
        owner = pwd.getpwnam(SERVER_USER)
        for path in (root, socket_dir):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    port = free_port()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "check": True, "cwd": root}
    try:
        subprocess.run(
            _as_server_user(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data_dir),
                    "-U",
                    DATABASE_USER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            **quiet,  # type: ignore[call-overload]
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {socket_dir} -c fsync=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        subprocess.run(
            _as_server_user(
                [
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(data_dir),
                    "-l",
                    str(root / "server.log"),
                    "-o",
                    options,
                    "-w",
                    "start",
                ]
            ),
            **quiet,  # type: ignore[call-overload]
        )
        try:
            yield PostgresCluster(
                url=f"postgresql://{DATABASE_USER}@127.0.0.1:{port}/postgres", port=port, data_dir=data_dir
            )
        finally:
            subprocess.run(
                _as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data_dir), "-m", "immediate", "-w", "stop"]),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=root,
            )
    except subprocess.CalledProcessError as error:
        log = root / "server.log"
        detail = log.read_text()[-2000:] if log.exists() else ""
        raise RuntimeError(f"{error.cmd[0]} failed: {error.stderr.decode()[-2000:]}{detail}") from None
    finally:
        shutil.rmtree(root, ignore_errors=True)
