"""Keep Langfuse's score configs in sync with `score_configs/`.

`sync_configs` creates or updates the eight score configs by name (the rubric's seven and
the derived `goal_probability`; never duplicates, never deletes) and caches name → id in `$SCORER_HOME/langfuse-configs.json`. The cache
is checked against the server once per run (`config_ids`): an archived, edited or
deleted config is repaired (unarchived, updated, re-created) before any score is sent.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from langfuse.api.commons.types.config_category import ConfigCategory
from langfuse.api.commons.types.score_config import ScoreConfig as LfScoreConfig
from pydantic import BaseModel, Field

from scorer.errors import ConfigError, SinkError
from scorer.judge.rubric import Rubric, ScoreConfig, default_rubric
from scorer.langfuse_client import LangfuseClient, get_client
from scorer.settings import get_settings

CACHE_FILE = "langfuse-configs.json"
log = logging.getLogger(__name__)


class SyncReport(BaseModel):
    """What `sync_configs` found and did."""

    host: str
    created: list[str] = Field(default_factory=list)
    updated: dict[str, list[str]] = Field(default_factory=dict)
    """Config name → fields that drifted from the repo and were updated."""
    unchanged: list[str] = Field(default_factory=list)
    unarchived: list[str] = Field(default_factory=list)
    conflicts: dict[str, str] = Field(default_factory=dict)
    """Drift that cannot be fixed through the API (the data type of an existing config)."""
    extra: list[str] = Field(default_factory=list)
    """Configs on the server that the rubric does not have (never deleted)."""
    archived: list[str] = Field(default_factory=list)
    ids: dict[str, str] = Field(default_factory=dict)
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.unarchived or self.archived)


def desired_fields(cfg: ScoreConfig) -> dict[str, Any]:
    """The Langfuse config fields a rubric score should have (SDK argument names)."""
    fields: dict[str, Any] = {"description": cfg.description}
    if cfg.data_type == "CATEGORICAL":
        fields["categories"] = [
            ConfigCategory(value=float(c.value), label=c.label) for c in cfg.categories
        ]
    else:
        fields["min_value"] = cfg.min_value
        fields["max_value"] = cfg.max_value
    return fields


def config_drift(cfg: ScoreConfig, server: LfScoreConfig) -> list[str]:
    """Names of the fields where the server's config differs from the repo (pure)."""
    want = desired_fields(cfg)
    drift = []
    if (server.description or "") != cfg.description:
        drift.append("description")
    if "categories" in want:
        have = sorted((float(c.value), c.label) for c in server.categories or [])
        if have != sorted((c.value, c.label) for c in want["categories"]):
            drift.append("categories")
    else:
        for key in ("min_value", "max_value"):
            if getattr(server, key) != want[key]:
                drift.append(key)
    return drift


def list_configs(client: LangfuseClient, *, limit: int = 100) -> list[LfScoreConfig]:
    """All score configs of the project (page-based paging)."""
    configs: list[LfScoreConfig] = []
    page = 1
    while True:
        resp = client.call(
            client.api.score_configs.get,
            error=SinkError,
            what="listing score configs",
            page=page,
            limit=limit,
        )
        configs.extend(resp.data)
        if page >= resp.meta.total_pages or not resp.data:
            return configs
        page += 1


def sync_configs(
    client: LangfuseClient | None = None,
    rubric: Rubric | None = None,
    *,
    archive_extra: bool = False,
    dry_run: bool = False,
) -> SyncReport:
    """Create or update the rubric's score configs in Langfuse, by name, idempotently.

    Args:
        client: The Langfuse project, or None to build one from the settings.
        rubric: The rubric to push (default: the bundled `score_configs/`).
        archive_extra: Archive server configs the rubric does not have (no delete exists).
        dry_run: Only report what would change.

    Returns:
        A `SyncReport`; the name → id map is also cached in `$SCORER_HOME`.
    """
    client = get_client(client)
    rubric = rubric or default_rubric()
    report = SyncReport(host=client.host, dry_run=dry_run)
    by_name: dict[str, LfScoreConfig] = {}
    # Oldest non-archived first, so a project that already holds duplicates stays stable.
    for cfg in sorted(list_configs(client), key=lambda c: (c.is_archived, c.created_at)):
        by_name.setdefault(cfg.name, cfg)
    for spec in rubric.all_configs:
        _sync_one(client, spec, by_name.get(spec.name), report)
    wanted = {s.name for s in rubric.all_configs}
    for name, server in sorted(by_name.items()):
        if name in wanted:
            continue
        report.extra.append(name)
        if archive_extra and not server.is_archived and not dry_run:
            client.call(
                client.api.score_configs.update,
                server.id,
                error=SinkError,
                what=f"archiving score config {name}",
                is_archived=True,
            )
            report.archived.append(name)
    if not dry_run:
        _write_cache(client, rubric, report.ids)
    return report


def _sync_one(
    client: LangfuseClient, cfg: ScoreConfig, server: LfScoreConfig | None, report: SyncReport
) -> None:
    fields = desired_fields(cfg)
    if server is None:
        report.created.append(cfg.name)
        if not report.dry_run:
            made = client.call(
                client.api.score_configs.create,
                error=SinkError,
                what=f"creating score config {cfg.name}",
                name=cfg.name,
                data_type=cfg.data_type,
                **fields,
            )
            report.ids[cfg.name] = made.id
        return
    report.ids[cfg.name] = server.id
    if server.data_type != cfg.data_type:
        report.conflicts[cfg.name] = (
            f"server has {server.data_type}, repo has {cfg.data_type}; data types cannot be "
            "changed through the API (rename or archive it in the Langfuse UI)"
        )
        return
    drift = config_drift(cfg, server)
    update: dict[str, Any] = {k: v for k, v in fields.items() if k in drift}
    if server.is_archived:
        report.unarchived.append(cfg.name)
        update["is_archived"] = False
    if drift:
        report.updated[cfg.name] = drift
    if not update:
        report.unchanged.append(cfg.name)
    elif not report.dry_run:
        client.call(
            client.api.score_configs.update,
            server.id,
            error=SinkError,
            what=f"updating score config {cfg.name}",
            **update,
        )


def _cache_path() -> Path:
    return get_settings().home / CACHE_FILE


def _read_cache() -> dict[str, Any]:
    try:
        data = json.loads(_cache_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(client: LangfuseClient, rubric: Rubric, ids: dict[str, str], **extra: Any) -> None:
    with _CACHE_LOCK:
        data = _read_cache()
        entry = data.get(client.cache_key, {})
        entry.update({"rubric_hash": rubric.hash, "configs": ids, **extra})
        data[client.cache_key] = entry
        _replace_cache(data)


def _replace_cache(data: dict[str, Any]) -> None:
    """Write the whole file atomically: a reader (another thread or process) sees the old
    file or the new one, never half of one (which it would take for "no cache")."""
    path = _cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)


_CONFIG_LOCK = threading.Lock()
_CACHE_LOCK = threading.Lock()
"""Read-modify-write of the cache file (config ids and the project id)."""


def config_ids(client: LangfuseClient, rubric: Rubric) -> dict[str, str]:
    """name → config id, from the cache when it matches this rubric, else via a sync.

    Serialized within the process: backfill workers pushing their first scorecards at the
    same time would otherwise each find no config and create the eight twice over.
    """
    with _CONFIG_LOCK:
        return _config_ids(client, rubric)


_CHECKED: set[str] = set()
"""Projects (`cache_key`) whose cached config ids were checked against the server."""


def forget_checks() -> None:
    """Check cached config ids again on next use (each backfill run starts with this)."""
    with _CONFIG_LOCK:
        _CHECKED.clear()


def cached_config_ids(client: LangfuseClient, rubric: Rubric) -> dict[str, str]:
    """The cached name → id map for this project and rubric (empty when stale, or when it
    lacks a config: a cache written before `goal_probability` existed gets it synced)."""
    entry = _read_cache().get(client.cache_key, {})
    ids = entry.get("configs") or {}
    if entry.get("rubric_hash") == rubric.hash and all(s.name in ids for s in rubric.all_configs):
        return dict(ids)
    return {}


def _config_ids(client: LangfuseClient, rubric: Rubric) -> dict[str, str]:
    ids = cached_config_ids(client, rubric)
    if ids and client.cache_key in _CHECKED:
        return ids
    # Once per run: a config archived or edited in the UI makes Langfuse drop every
    # later score after answering 202, so the cache alone cannot be trusted.
    problems = config_health(client, rubric, ids) if ids else {"*": "no cache"}
    if problems:
        if ids:
            log.warning("Langfuse score configs need a repair: %s", problems)
        report = sync_configs(client, rubric)
        ids = report.ids
        if report.conflicts:
            name, why = next(iter(report.conflicts.items()))
            raise ConfigError(f"Langfuse score config {name!r} does not match the repo: {why}")
    _CHECKED.add(client.cache_key)
    return ids


def config_health(client: LangfuseClient, rubric: Rubric, ids: dict[str, str]) -> dict[str, str]:
    """Config name → why Langfuse's worker would drop scores pushed with this id."""
    server = {c.id: c for c in list_configs(client)}
    problems: dict[str, str] = {}
    for spec in rubric.all_configs:
        cfg: LfScoreConfig | None = server.get(ids.get(spec.name, ""))
        if cfg is None:
            problems[spec.name] = "its score config no longer exists"
        elif cfg.is_archived:
            problems[spec.name] = "its score config is archived in Langfuse"
        elif cfg.name != spec.name:
            problems[spec.name] = f"its score config was renamed to {cfg.name!r}"
        elif cfg.data_type != spec.data_type:
            problems[spec.name] = f"its score config's data type is now {cfg.data_type}"
        elif drift := [d for d in config_drift(spec, cfg) if d != "description"]:
            problems[spec.name] = f"its score config's {', '.join(drift)} changed"
    return problems


def project_id(client: LangfuseClient) -> str | None:
    """The project of the API key (cached beside the config ids)."""
    cached = _read_cache().get(client.cache_key, {}).get("project_id")
    if cached:
        return cached
    projects = client.call(client.api.projects.get, error=SinkError, what="reading the project")
    if not projects.data:
        return None
    pid = projects.data[0].id
    with _CACHE_LOCK:
        data = _read_cache()
        data.setdefault(client.cache_key, {})["project_id"] = pid
        _replace_cache(data)
    return pid
