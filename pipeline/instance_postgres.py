"""The Dagster instance on PostgreSQL, beside the embedded SQLite default.

`deploy/dagster.postgres.yaml` is the template: `storage: postgres` whose connection fields
come from the environment variables in `ENV_VARS` (`{env: DAGSTER_PG_HOST}` ...).

    write_postgres_instance(home)                       # copy the template: env-based
    write_postgres_instance(home, host="db", port=5432, user="dagster", password="s3cret", db="dagster")
                                                        # the given values written in, the rest env
    postgres_url()                                      # postgresql://user:pw@host:port/db from env
    postgres_env(host, port, user, password, db)        # {"DAGSTER_PG_HOST": ..., ...} for a subprocess

Needs the `cluster` extra (dagster-postgres, psycopg2) only when an instance is opened; this
module itself imports neither. `pipeline.instance.ensure_dagster_home` leaves an existing
`DAGSTER_HOME/dagster.yaml` alone, so the CLI, `make ui` and `dagster ...` use this one
once it is written.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import yaml

from config.settings import PROJECT_ROOT

TEMPLATE = PROJECT_ROOT / "deploy" / "dagster.postgres.yaml"

# Connection field -> (environment variable, key under storage.postgres.postgres_db)
ENV_VARS = {
    "host": "DAGSTER_PG_HOST",
    "port": "DAGSTER_PG_PORT",
    "user": "DAGSTER_PG_USER",
    "password": "DAGSTER_PG_PASSWORD",
    "db": "DAGSTER_PG_DB",
}
_DB_KEYS = {"host": "hostname", "port": "port", "user": "username", "password": "password", "db": "db_name"}
DEFAULT_PORT = 5432


def _template_text(template: Path | None) -> str:
    path = Path(template) if template is not None else TEMPLATE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the PostgreSQL dagster.yaml template is missing (deploy/ of the project checkout)")
    return path.read_text()


def write_postgres_instance(
    home: str | Path,
    host: str | None = None,
    port: int | str | None = None,
    user: str | None = None,
    password: str | None = None,
    db: str | None = None,
    *,
    template: str | Path | None = None,
) -> Path:
    """Write `home/dagster.yaml` (replacing one that is there) for PostgreSQL storage; return its path.

    With no connection values the template is copied as it is: every field comes from its
    environment variable (`ENV_VARS`) in each process that opens the instance. A value given
    here is written into the file instead of its `env:` entry; the file is then readable by
    its owner only when it holds a password.
    """
    home = Path(home).expanduser().resolve()
    home.mkdir(parents=True, exist_ok=True)
    text = _template_text(template)
    given = {k: v for k, v in dict(host=host, port=port, user=user, password=password, db=db).items() if v is not None}
    if given:
        config = yaml.safe_load(text)
        fields = config["storage"]["postgres"]["postgres_db"]
        for name, value in given.items():
            fields[_DB_KEYS[name]] = int(value) if name == "port" else str(value)
        env_left = sorted(ENV_VARS[k] for k in ENV_VARS if k not in given)
        header = (
            "# Dagster instance with PostgreSQL storage, written by pipeline.instance_postgres\n"
            "# .write_postgres_instance from deploy/dagster.postgres.yaml.\n"
            + (f"# From the environment: {', '.join(env_left)}.\n" if env_left else "")
        )
        text = header + yaml.safe_dump(config, sort_keys=False)
    path = home / "dagster.yaml"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    if "password" in given:
        tmp.chmod(0o600)
    os.replace(tmp, path)
    return path


def _resolve(name: str, value, default=None) -> str:
    if value is not None:
        return str(value)
    env = os.environ.get(ENV_VARS[name])
    if env is not None:
        return env
    if default is not None:
        return str(default)
    raise ValueError(f"PostgreSQL connection: no {name} given and {ENV_VARS[name]} is not set")


def postgres_url(
    host: str | None = None,
    port: int | str | None = None,
    user: str | None = None,
    password: str | None = None,
    db: str | None = None,
    scheme: str = "postgresql",
) -> str:
    """`postgresql://user[:password]@host:port/db` for psycopg2/libpq/psql; with
    scheme="postgresql+psycopg2" the SQLAlchemy URL that dagster-postgres builds from the
    template. A value not given comes from its environment variable (port: 5432, password:
    none by default); user and password are percent-encoded."""
    user_ = _resolve("user", user)
    password_ = _resolve("password", password, default="")
    userinfo = f"{quote(user_)}:{quote(password_)}" if password_ else quote(user_)
    return f"{scheme}://{userinfo}@{_resolve('host', host)}:{int(_resolve('port', port, DEFAULT_PORT))}/{_resolve('db', db)}"


def postgres_env(host: str, port: int | str, user: str, password: str, db: str) -> dict[str, str]:
    """The environment variables that the template reads, e.g. `{**os.environ, **postgres_env(...)}`."""
    values = dict(host=host, port=port, user=user, password=password, db=db)
    return {ENV_VARS[k]: str(v) for k, v in values.items()}
