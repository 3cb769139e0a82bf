"""The Dagster instance on a real PostgreSQL server.

A module-scoped fixture runs a throw-away server: initdb into a fresh temporary folder, then
`pg_ctl start` listening on 127.0.0.1 only, on a free port, with its unix socket in that
folder, and `pg_ctl stop -m fast` at the end (also when a test fails). As root, the server
runs as the `postgres` user (PostgreSQL refuses to run as root). Without the server binaries
the server tests are skipped (`.ci/postgres.sh` installs them); with
TRADELAB_REQUIRE_POSTGRES=1 they fail instead.

The materialization goes through the shell as a user runs it: `python -m pipeline.cli
symbols sync` and `dagster asset materialize` with DAGSTER_HOME holding the PostgreSQL
dagster.yaml; then the run, the materialization and the registered symbols are read back
from the database.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from config.partitions import SymbolYear
from resources.delta_store import DeltaStore
from pipeline.instance_postgres import ENV_VARS, TEMPLATE, postgres_env, postgres_url, write_postgres_instance

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).parent / "dagster")
PG_USER, PG_PASSWORD, PG_DB = "dagster", "pw with spaces&:@", "tradelab_dagster"
INSTALL_HINT = "`.ci/postgres.sh` installs them (apt-get install postgresql)"


# ---------------------------------------------------------------- no server needed


def test_template_reads_every_connection_field_from_the_environment():
    config = yaml.safe_load(TEMPLATE.read_text())
    fields = config["storage"]["postgres"]["postgres_db"]
    assert fields == {
        "hostname": {"env": "DAGSTER_PG_HOST"}, "port": {"env": "DAGSTER_PG_PORT"},
        "username": {"env": "DAGSTER_PG_USER"}, "password": {"env": "DAGSTER_PG_PASSWORD"},
        "db_name": {"env": "DAGSTER_PG_DB"}, "scheme": "postgresql+psycopg2",
    }
    assert config["telemetry"] == {"enabled": False}
    assert config["run_coordinator"]["class"] == "DefaultRunCoordinator"


def test_write_and_url(tmp_path, monkeypatch):
    path = write_postgres_instance(tmp_path / "home")
    assert path == (tmp_path / "home" / "dagster.yaml").resolve() and path.read_text() == TEMPLATE.read_text()

    path = write_postgres_instance(tmp_path / "home", host="db.local", port="6543", user="u", password="p:w")
    fields = yaml.safe_load(path.read_text())["storage"]["postgres"]["postgres_db"]
    assert fields == {"hostname": "db.local", "port": 6543, "username": "u", "password": "p:w",
                      "db_name": {"env": "DAGSTER_PG_DB"}, "scheme": "postgresql+psycopg2"}
    assert path.stat().st_mode & 0o077 == 0  # holds a password: owner only

    for var in ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    assert postgres_url("h", 5433, "a b", "p@ss", "d") == "postgresql://a%20b:p%40ss@h:5433/d"
    with pytest.raises(ValueError, match="DAGSTER_PG_HOST"):
        postgres_url(user="u", db="d")
    for var, value in postgres_env("h", 5432, "u", "", "d").items():
        monkeypatch.setenv(var, value)
    assert postgres_url() == "postgresql://u@h:5432/d"
    assert postgres_url(scheme="postgresql+psycopg2") == "postgresql+psycopg2://u@h:5432/d"


# ---------------------------------------------------------------- a real server


def _unavailable(message: str):
    if os.environ.get("TRADELAB_REQUIRE_POSTGRES"):
        pytest.fail(message + " (TRADELAB_REQUIRE_POSTGRES is set)")
    pytest.skip(message)


def _find_server_bins() -> tuple[Path, Path] | None:
    """initdb and pg_ctl: from PATH, else from Debian's /usr/lib/postgresql/<version>/bin (newest)."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return Path(initdb), Path(pg_ctl)

    def version(bindir: str) -> tuple[int, ...]:
        return tuple(int(x) for x in Path(bindir).parent.name.split(".") if x.isdigit())

    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        if (Path(bindir) / "initdb").is_file() and (Path(bindir) / "pg_ctl").is_file():
            return Path(bindir) / "initdb", Path(bindir) / "pg_ctl"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


@pytest.fixture(scope="module")
def pg_server():
    """A running PostgreSQL server with database PG_DB; yields its connection values."""
    psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2 missing: install the `cluster` extra")
    pytest.importorskip("dagster_postgres", reason="dagster-postgres missing: install the `cluster` extra")
    bins = _find_server_bins()
    if bins is None:
        _unavailable(f"PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin; {INSTALL_HINT}")
    initdb, pg_ctl = map(str, bins)

    as_root = os.geteuid() == 0
    prefix: list[str] = []
    if as_root:  # postgres refuses to run as root: run it as Debian's `postgres` user
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            _unavailable(f"running as root and there is no `postgres` user to run the server as; {INSTALL_HINT}")
        if shutil.which("runuser"):
            prefix = ["runuser", "-u", "postgres", "--"]
        elif shutil.which("setpriv"):
            prefix = ["setpriv", f"--reuid={owner.pw_uid}", f"--regid={owner.pw_gid}", "--init-groups", "--"]
        else:
            _unavailable("running as root and neither runuser nor setpriv is there to run the server as `postgres`")

    # Not under pytest's tmp dir (mode 0700, root's when root): the server user must reach it.
    # Short path: the unix socket path is limited to about 100 characters.
    tmp = Path(tempfile.mkdtemp(prefix="tradelab-pg-", dir="/tmp" if os.path.isdir("/tmp") else None))
    data, log, pwfile = tmp / "data", tmp / "server.log", tmp / "pwfile"
    pwfile.write_text(PG_PASSWORD + "\n")
    if as_root:
        for p in (tmp, pwfile):
            os.chown(p, owner.pw_uid, owner.pw_gid)
    tmp.chmod(0o700)

    def run(*cmd: str, timeout: int = 60) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=timeout, cwd=tmp)

    started = False
    try:
        out = run(initdb, "-D", str(data), "-U", PG_USER, f"--pwfile={pwfile}", "-E", "UTF8",
                  "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "--no-instructions")
        if out.returncode != 0:
            pytest.fail(f"initdb failed ({initdb}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        pwfile.unlink()
        for _attempt in range(3):  # the free port may be taken between the probe and the start
            port = _free_port()
            opts = (f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={tmp} "
                    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
            out = run(pg_ctl, "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "30", "start")
            started = out.returncode == 0
            if started:
                break
        if not started:
            pytest.fail(f"pg_ctl start failed:\n{out.stdout[-1000:]}\n{out.stderr[-1000:]}\nlog:\n{_tail(log)}")

        # Over TCP with the password: the same path Dagster takes.
        conn = psycopg2.connect(host="127.0.0.1", port=port, user=PG_USER, password=PG_PASSWORD, dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {PG_DB}")
        conn.close()
        yield {"host": "127.0.0.1", "port": port, "user": PG_USER, "password": PG_PASSWORD, "db": PG_DB, "log": log}
    finally:
        if started or (data / "postmaster.pid").exists():
            out = run(pg_ctl, "-D", str(data), "-m", "fast", "-w", "-t", "30", "stop")
            if out.returncode != 0:  # last resort: the postmaster's own pid, nothing else
                with contextlib.suppress(Exception):
                    os.kill(int((data / "postmaster.pid").read_text().split()[0]), 9)
                    time.sleep(0.5)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def materialized(pg_server, tmp_path_factory):
    """`symbols sync` and one `raw_bars` partition through the shell on the PostgreSQL instance."""
    tmp = tmp_path_factory.mktemp("pg_shell")
    cfg = tmp / "settings.yaml"
    cfg.write_text(yaml.safe_dump({
        "paths": {"data": "data", "reports": "reports", "models": "models"},
        "years": {"start": 2000, "end": None},
        "universe": {"source": "synthetic", "synthetic": {"symbols": ["AAA", "BBB"], "seed": 3, "end_date": "2002-12-31"}},
    }))
    home = tmp / "home"
    write_postgres_instance(home)  # env-based: the template as it is
    conn = {k: pg_server[k] for k in ("host", "port", "user", "password", "db")}
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(home), **postgres_env(**conn)}

    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", "sync"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "registered 2 new symbol(s); 2 in all: AAA, BBB" in out.stdout
    out = subprocess.run([DAGSTER, "asset", "materialize", "-m", "pipeline.definitions", "--select", "raw_bars",
                          "--partition", "AAA|2001"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:] + "\nserver log:\n" + _tail(pg_server["log"])
    print(f"postgres shell round trip: {time.monotonic() - started:.1f} s")
    return tmp, home, conn


def test_materialization_from_the_shell_is_stored_in_postgres(materialized):
    import psycopg2

    tmp, home, conn = materialized
    df = DeltaStore(tmp / "data").read("raw_bars", [SymbolYear("AAA", 2001)])
    assert df.height > 200 and df["symbol"].unique().to_list() == ["AAA"]

    with contextlib.closing(psycopg2.connect(postgres_url(**conn))) as db, db.cursor() as cur:
        cur.execute("SELECT status FROM runs")
        assert [r[0] for r in cur.fetchall()] == ["SUCCESS"]
        cur.execute("SELECT asset_key, partition FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'")
        assert cur.fetchall() == [('["raw_bars"]', "AAA|2001")]
        cur.execute("SELECT partition FROM dynamic_partitions WHERE partitions_def_name = 'symbols' ORDER BY partition")
        assert [r[0] for r in cur.fetchall()] == ["AAA", "BBB"]

    # Nothing went to SQLite: no database files under DAGSTER_HOME.
    assert not list(home.rglob("*.db")), sorted(map(str, home.rglob("*.db")))


def test_instance_from_a_written_config_sees_the_run(materialized, tmp_path):
    from dagster import AssetKey, DagsterInstance, DagsterRunStatus
    from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage

    _, _, conn = materialized
    # The values written into the file this time (no environment variables needed).
    home = write_postgres_instance(tmp_path / "home2", **conn).parent
    with DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        runs = instance.get_runs()
        assert [r.status for r in runs] == [DagsterRunStatus.SUCCESS]
        event = instance.get_latest_materialization_event(AssetKey("raw_bars"))
        assert event is not None and event.run_id == runs[0].run_id
        assert event.asset_materialization.partition == "AAA|2001"
        assert instance.get_dynamic_partitions("symbols") == ["AAA", "BBB"]
