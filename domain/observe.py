"""The stages' report files, re-exported for domain code: atomic writes and sidecars
(resources.sidecars). The Dagster wrapper of a materialization, `observe`, is
resources.observe.observe (domain imports no Dagster).
"""

from resources.sidecars import (  # noqa: F401  (re-exported)
    Observation,
    git_sha,
    partition_label,
    peak_rss_mb,
    safe_name,
    write_bytes_atomic,
    write_json_atomic,
    write_sidecar,
)
