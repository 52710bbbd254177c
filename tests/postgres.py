"""A throwaway Postgres server from Debian's binaries: `initdb` into a temporary
folder, `pg_ctl start` on a random port with its unix socket in that folder, and
`pg_ctl stop` (then SIGKILL) whatever happens. As root the server runs as the
`postgres` user, which Postgres insists on.

    with PostgresServer.start(folder) as server:
        dsn = server.create_database("t1")   # a fresh, empty database per test

`PgBouncer` puts Debian's `pgbouncer` in transaction mode (the usual pooler in
front of a managed Postgres) on another random port in front of such a server.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

__all__ = ["PgBouncer", "PostgresServer", "find_binaries"]


def find_binaries() -> Path | None:
    """The folder holding `initdb` and `pg_ctl` (PATH first, then Debian's layout)."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    def __init__(self, folder: Path, binaries: Path) -> None:
        self.folder = folder
        self.binaries = binaries
        self.data = folder / "data"
        self.port = _free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        self._count = 0

    @classmethod
    def start(cls, folder: Path) -> PostgresServer:
        binaries = find_binaries()
        if binaries is None:
            raise FileNotFoundError("no Postgres server binaries (initdb, pg_ctl)")
        server = cls(folder, binaries)
        try:
            server._init_and_start()
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        command = [str(self.binaries / argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)

    def _init_and_start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.user is not None:
            shutil.chown(self.folder, self.user)
            self.folder.chmod(0o755)
            # runuser must be able to reach the folder through its parents.
            for parent in self.folder.parents:
                if parent == Path("/"):
                    break
                parent.chmod(parent.stat().st_mode | 0o011)
        done = self._run("initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres",
                         "--no-sync", "-E", "UTF8", "--locale=C.UTF-8")
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{done.stdout}\n{done.stderr}")
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
                   " -c fsync=off -c max_connections=200")
        done = self._run("pg_ctl", "start", "-D", str(self.data), "-w", "-t", "60",
                         "-l", str(self.folder / "server.log"), "-o", options)
        if done.returncode != 0:
            log = (self.folder / "server.log")
            raise RuntimeError(f"pg_ctl start failed:\n{done.stdout}\n{done.stderr}\n"
                               f"{log.read_text() if log.exists() else ''}")

    def dsn(self, database: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; returns its DSN."""
        import psycopg

        self._count += 1
        name = f"{prefix}_{os.getpid()}_{self._count}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def stop(self) -> None:
        """Stop fast; kill the postmaster if it does not stop in time."""
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return
        try:
            pid = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w", "-t", "20",
                      timeout=30)
        if pid is not None:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PgBouncer:
    """`pgbouncer` in transaction mode on a random 127.0.0.1 port, forwarding every
    database to `server`; killed (with its process) whatever happens. As root it
    runs as `postgres`, since pgbouncer refuses to run as root."""

    def __init__(self, folder: Path, server: PostgresServer) -> None:
        self.folder = folder
        self.server = server
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, folder: Path, server: PostgresServer) -> PgBouncer:
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        if not Path(binary).exists():
            raise FileNotFoundError("no pgbouncer: apt-get install pgbouncer")
        bouncer = cls(folder, server)
        try:
            bouncer._start(binary)
        except BaseException:
            bouncer.stop()
            raise
        return bouncer

    def _start(self, binary: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "userlist.txt").write_text('"postgres" ""\n')
        # Idle server sessions close soon: each test's database gets a pool of its own.
        (self.folder / "pgbouncer.ini").write_text(f"""\
[databases]
* = host=127.0.0.1 port={self.server.port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.folder / "userlist.txt"}
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 10
server_idle_timeout = 2
log_connections = 0
log_disconnections = 0
logfile = {self.folder / "pgbouncer.log"}
pidfile = {self.folder / "pgbouncer.pid"}
""")
        command = [binary, str(self.folder / "pgbouncer.ini")]
        if self.server.user is not None:
            shutil.chown(self.folder, self.server.user)
            for child in self.folder.iterdir():
                shutil.chown(child, self.server.user)
            command = ["runuser", "-u", self.server.user, "--", *command]
        # Not a pipe: pgbouncer also logs every connection to stderr, and blocks once a
        # pipe nobody reads is full.
        with open(self.folder / "stderr.log", "wb") as stderr:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        self._wait_until_it_answers()

    def _wait_until_it_answers(self) -> None:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited ({self.process.returncode}): {self._log()}")
            try:
                psycopg.connect(self.dsn("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError as err:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"pgbouncer never answered: {err}\n{self._log()}") from err
                time.sleep(0.1)

    def _log(self) -> str:
        return "".join((self.folder / name).read_text(errors="replace")[-4000:]
                       for name in ("stderr.log", "pgbouncer.log") if (self.folder / name).exists())

    def dsn(self, database: str, *, listen_at_the_server: bool = False) -> str:
        """The URL of `database` through the pooler; with `listen_at_the_server`, with
        the server's own URL as the store's `listen_url` (LISTEN needs a session)."""
        url = f"postgresql://postgres@127.0.0.1:{self.port}/{database}"
        if listen_at_the_server:
            url += "?listen_url=" + quote(self.server.dsn(database), safe="")
        return url

    def stop(self) -> None:
        pid_file = self.folder / "pgbouncer.pid"
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait(timeout=30)

    def __enter__(self) -> PgBouncer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
