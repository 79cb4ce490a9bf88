"""The store's exact schema after every migration, written out literally for SQLite and for
PostgreSQL, and how to read it back from a live database (used by tests/test_store.py).

A change to ``recallbench/store/_migrations.py`` must change this file too.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

MIGRATIONS = [
    (1, "m001_history"),
    (2, "m002_telemetry"),
    (3, "m003_judge_cache"),
    (4, "m004_llm_judgments"),
    (5, "m005_run_judge"),
    (6, "m006_pairwise_preferences"),
    (7, "m007_shadow_errors"),
    (8, "m008_shadow_tests"),
    (9, "m009_store_marker"),
    (10, "m010_interleaved_credited"),
    (11, "m011_annotations"),
    (12, "m012_fleet_keys"),
    (13, "m013_read_indexes"),
    (14, "m014_shadow_query_key"),
    (15, "m015_run_statistics"),
    (16, "m016_shadow_checkpoints"),
]

# ---------------------------------------------------------------- SQLite

SQLITE_COLUMNS = {
    # (name, type, notnull, default, pk) as PRAGMA table_info reports them
    "schema_migrations": [
        ("id", "INTEGER", 1, None, 1),
        ("name", "TEXT", 1, None, 0),
        ("applied_at", "DATETIME", 1, None, 0),
    ],
    "eval_runs": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("system", "TEXT", 1, None, 0),
        ("system_settings", "TEXT", 1, None, 0),
        ("dataset_name", "TEXT", 1, None, 0),
        ("dataset_version", "TEXT", 1, None, 0),
        ("dataset_sha256", "TEXT", 1, None, 0),
        ("dataset_loader", "TEXT", 0, None, 0),
        ("relevance_threshold", "INTEGER", 1, None, 0),
        ("k", "INTEGER", 0, None, 0),
        ("recallbench_version", "TEXT", 1, None, 0),
        ("git_revision", "TEXT", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
        ("recorded_at", "DATETIME", 1, None, 0),
        ("accepted", "BOOLEAN", 1, "0", 0),
        ("accepted_at", "DATETIME", 0, None, 0),
        ("queries", "INTEGER", 1, None, 0),
        ("evaluated", "INTEGER", 1, None, 0),
        ("failed", "INTEGER", 1, None, 0),
        ("missing", "INTEGER", 1, None, 0),
        ("no_relevant", "INTEGER", 1, None, 0),
        ("latency_p50", "FLOAT", 0, None, 0),
        ("latency_p95", "FLOAT", 0, None, 0),
        ("latency_p99", "FLOAT", 0, None, 0),
        ("source", "TEXT", 0, None, 0),
        ("rules", "TEXT", 1, None, 0),
        # added by m005 (ALTER TABLE appends them)
        ("judge_model", "TEXT", 0, None, 0),
        ("judge_prompt", "TEXT", 0, None, 0),
        ("llm_labels", "INTEGER", 0, None, 0),
        ("judge_failure_rate", "FLOAT", 0, None, 0),
        ("judge_unreliable", "BOOLEAN", 0, None, 0),
        ("judge_tokens", "INTEGER", 0, None, 0),
        ("judge_cost", "FLOAT", 0, None, 0),
    ],
    "eval_measures": [
        ("run_id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("measure", "TEXT", 1, None, 2),
        ("mean", "FLOAT", 0, None, 0),
        ("higher_is_better", "BOOLEAN", 1, None, 0),
        ("position", "INTEGER", 1, None, 0),
    ],
    "eval_queries": [
        ("run_id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 2),
        ("position", "INTEGER", 1, None, 0),
        ("category", "TEXT", 0, None, 0),
        ("intent", "TEXT", 0, None, 0),
        ("status", "TEXT", 1, None, 0),
        ("latency_ms", "FLOAT", 0, None, 0),
    ],
    "eval_query_values": [
        ("run_id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 2),
        ("measure", "TEXT", 1, None, 3),
        ("value", "FLOAT", 0, None, 0),
    ],
    "query_log": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 0),
        ("text", "TEXT", 1, None, 0),
        ("intent", "TEXT", 0, None, 0),
        ("mode", "TEXT", 0, None, 0),
        ("session_id", "TEXT", 0, None, 0),
        ("tool", "TEXT", 0, None, 0),
        ("results", "TEXT", 1, None, 0),
        ("channels", "TEXT", 1, None, 0),
        ("texts", "TEXT", 1, None, 0),
        ("latency_ms", "FLOAT", 0, None, 0),
        ("trace_id", "TEXT", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
        ("golden", "BOOLEAN", 1, "0", 0),
        ("category", "TEXT", 0, None, 0),
    ],
    "feedback_events": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 0),
        ("kind", "TEXT", 1, None, 0),
        ("doc_id", "TEXT", 0, None, 0),
        ("rank", "INTEGER", 0, None, 0),
        ("session_id", "TEXT", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
        ("event_id", "TEXT", 0, None, 0),  # added by m012
    ],
    "judgments": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 0),
        ("doc_id", "TEXT", 1, None, 0),
        ("grade", "INTEGER", 1, None, 0),
        ("source", "TEXT", 1, None, 0),
        ("annotator", "TEXT", 0, None, 0),
        ("confidence", "FLOAT", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
    ],
    "ab_tests": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("name", "TEXT", 1, None, 0),
        ("control", "TEXT", 1, None, 0),
        ("treatment", "TEXT", 1, None, 0),
        ("measure", "TEXT", 1, None, 0),
        ("status", "TEXT", 1, None, 0),
        ("sprt_state", "TEXT", 0, None, 0),
        ("beta_state", "TEXT", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
        ("updated_at", "DATETIME", 1, None, 0),
        ("decided_at", "DATETIME", 0, None, 0),
        ("decision", "TEXT", 0, None, 0),
    ],
    "shadow_runs": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("ab_test_id", "INTEGER", 0, None, 0),
        ("query_id", "TEXT", 1, None, 0),
        ("control_results", "TEXT", 1, None, 0),
        ("treatment_results", "TEXT", 1, None, 0),
        ("control_latency_ms", "FLOAT", 0, None, 0),
        ("treatment_latency_ms", "FLOAT", 0, None, 0),
        ("kendall_tau", "FLOAT", 0, None, 0),
        ("jaccard", "FLOAT", 0, None, 0),
        ("top1_changed", "BOOLEAN", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
        # added by m007 (ALTER TABLE appends them)
        ("control_error", "TEXT", 0, None, 0),
        ("treatment_error", "TEXT", 0, None, 0),
        # added by m008
        ("interleaved", "TEXT", 0, None, 0),
        ("session_id", "TEXT", 0, None, 0),
        ("control", "TEXT", 0, None, 0),
        ("treatment", "TEXT", 0, None, 0),
        # added by m010
        ("interleaved_credited", "INTEGER", 0, None, 0),
        # added by m014
        ("query_key", "TEXT", 0, None, 0),
    ],
    "judge_cache": [
        ("workspace_id", "TEXT", 1, "'default'", 1),
        ("cache_key", "TEXT", 1, None, 2),
        ("task", "TEXT", 1, None, 0),
        ("prompt_version", "TEXT", 1, None, 0),
        ("model", "TEXT", 1, None, 0),
        ("params", "TEXT", 1, None, 0),
        ("input_sha256", "TEXT", 1, None, 0),
        ("response", "TEXT", 1, None, 0),
        ("parsed", "TEXT", 0, None, 0),
        ("raw", "TEXT", 0, None, 0),
        ("value", "TEXT", 0, None, 0),
        ("score", "FLOAT", 0, None, 0),
        ("failure", "TEXT", 0, None, 0),
        ("answered_by", "TEXT", 0, None, 0),
        ("tokens_in", "INTEGER", 0, None, 0),
        ("tokens_out", "INTEGER", 0, None, 0),
        ("latency_ms", "FLOAT", 0, None, 0),
        ("cost", "FLOAT", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
    ],
    "pairwise_preferences": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, None, 0),  # no default: the dashboard's table had none
        ("item", "TEXT", 1, None, 0),
        ("query_text", "TEXT", 1, None, 0),
        ("first_label", "TEXT", 1, None, 0),
        ("first_results", "TEXT", 1, None, 0),
        ("second_label", "TEXT", 1, None, 0),
        ("second_results", "TEXT", 1, None, 0),
        ("preferred", "TEXT", 1, None, 0),
        ("shown", "TEXT", 1, None, 0),
        ("annotator", "TEXT", 1, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
    ],
    "shadow_tests": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("name", "TEXT", 1, None, 0),
        ("control", "TEXT", 1, None, 0),
        ("treatment", "TEXT", 1, None, 0),
        ("measure", "TEXT", 1, None, 0),
        ("guardrails", "TEXT", 1, None, 0),
        ("rule", "TEXT", 1, None, 0),
        ("alpha", "FLOAT", 1, None, 0),
        ("started_at", "DATETIME", 1, None, 0),
        ("stopped_at", "DATETIME", 0, None, 0),
        ("status", "TEXT", 1, None, 0),
    ],
    "shadow_checkpoints": [  # m016
        ("test_id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("covered_until", "DATETIME", 1, None, 0),
        ("marks", "TEXT", 1, None, 0),
        ("progress", "BLOB", 1, None, 0),
        ("written_at", "DATETIME", 1, None, 0),
    ],
    "shadow_decisions": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("test_id", "INTEGER", 1, None, 0),
        ("at", "DATETIME", 1, None, 0),
        ("decision", "TEXT", 1, None, 0),
        ("evidence", "TEXT", 1, None, 0),
        ("actor", "TEXT", 0, None, 0),
    ],
    "feature_flags": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("name", "TEXT", 1, None, 0),
        ("variant", "TEXT", 1, None, 0),
        ("percent", "FLOAT", 1, None, 0),
        ("fallback", "TEXT", 0, None, 0),
        ("updated_at", "DATETIME", 1, None, 0),
    ],
    "session_outcomes": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("session_id", "TEXT", 1, None, 0),
        ("outcome", "FLOAT", 0, None, 0),
        ("success", "BOOLEAN", 0, None, 0),
        ("note", "TEXT", 0, None, 0),
        ("recorded_at", "DATETIME", 1, None, 0),
        ("source", "TEXT", 1, None, 0),
    ],
    "recallbench_store": [
        ("id", "INTEGER", 1, None, 1),
        ("recallbench_version", "TEXT", 1, None, 0),
        ("marked_at", "DATETIME", 1, None, 0),
    ],
    # m011
    "annotations": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 0),
        ("doc_id", "TEXT", 1, None, 0),
        ("annotator", "TEXT", 1, None, 0),
        ("grade", "INTEGER", 0, None, 0),
        ("version", "INTEGER", 1, None, 0),
        ("updated_at", "DATETIME", 1, None, 0),
    ],
    "adjudications": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 0),
        ("doc_id", "TEXT", 1, None, 0),
        ("adjudicator", "TEXT", 1, None, 0),
        ("grade", "INTEGER", 0, None, 0),
        ("version", "INTEGER", 1, None, 0),
        ("updated_at", "DATETIME", 1, None, 0),
    ],
    "annotation_events": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 0),
        ("doc_id", "TEXT", 1, None, 0),
        ("annotator", "TEXT", 1, None, 0),
        ("action", "TEXT", 1, None, 0),
        ("adjudication", "BOOLEAN", 1, None, 0),
        ("old_grade", "INTEGER", 0, None, 0),
        ("new_grade", "INTEGER", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
    ],
    # m015
    "eval_run_statistics": [
        ("run_id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("measure", "TEXT", 1, None, 2),
        ("settings", "TEXT", 1, None, 3),
        ("n", "INTEGER", 1, None, 0),
        ("low", "FLOAT", 0, None, 0),
        ("high", "FLOAT", 0, None, 0),
        ("small", "BOOLEAN", 1, None, 0),
        ("reason", "TEXT", 0, None, 0),
        ("previous_run_id", "INTEGER", 0, None, 0),
        ("change_n", "INTEGER", 0, None, 0),
        ("change_delta", "FLOAT", 0, None, 0),
        ("change_p", "FLOAT", 0, None, 0),
    ],
}

SQLITE_INDEXES = {
    # name -> (unique, origin, columns); origin "pk" is a primary key's own index, "u" a
    # UNIQUE constraint's, "c" a CREATE INDEX
    "schema_migrations": {},
    "eval_runs": {
        "ix_eval_runs_series": (
            0,
            "c",
            ["workspace_id", "system", "dataset_sha256", "created_at"],
        ),
    },
    "eval_measures": {"sqlite_autoindex_eval_measures_1": (1, "pk", ["run_id", "measure"])},
    "eval_queries": {"sqlite_autoindex_eval_queries_1": (1, "pk", ["run_id", "query_id"])},
    "eval_query_values": {
        "sqlite_autoindex_eval_query_values_1": (1, "pk", ["run_id", "query_id", "measure"])
    },
    "query_log": {
        "ix_query_log_created": (0, "c", ["workspace_id", "created_at"]),
        "ix_query_log_session": (0, "c", ["workspace_id", "session_id"]),
        "sqlite_autoindex_query_log_1": (1, "u", ["workspace_id", "query_id"]),
    },
    "feedback_events": {
        "ix_feedback_events_query": (0, "c", ["workspace_id", "query_id"]),
        "uq_feedback_events_event": (1, "c", ["workspace_id", "event_id"]),  # m012
        "ix_feedback_events_created": (0, "c", ["workspace_id", "created_at", "id"]),  # m013
        "ix_feedback_events_kind": (0, "c", ["workspace_id", "kind", "created_at", "id"]),  # m013
    },
    "judgments": {
        "sqlite_autoindex_judgments_1": (1, "u", ["workspace_id", "query_id", "doc_id", "source"])
    },
    "ab_tests": {"sqlite_autoindex_ab_tests_1": (1, "u", ["workspace_id", "name"])},
    "shadow_runs": {
        "ix_shadow_runs_created": (0, "c", ["workspace_id", "created_at"]),
        "ix_shadow_runs_ab_test": (0, "c", ["ab_test_id", "created_at"]),
        "uq_shadow_runs_query": (1, "c", ["workspace_id", "query_id"]),  # m012
    },
    "judge_cache": {
        "ix_judge_cache_task": (0, "c", ["workspace_id", "task", "prompt_version", "model"]),
        "sqlite_autoindex_judge_cache_1": (1, "pk", ["workspace_id", "cache_key"]),
    },
    "pairwise_preferences": {
        "sqlite_autoindex_pairwise_preferences_1": (
            1,
            "u",
            ["workspace_id", "item", "annotator"],
        ),
    },
    "shadow_tests": {"sqlite_autoindex_shadow_tests_1": (1, "u", ["workspace_id", "name"])},
    "shadow_decisions": {"ix_shadow_decisions_test": (0, "c", ["test_id", "at"])},
    "shadow_checkpoints": {},  # m016
    "feature_flags": {
        "ix_feature_flags_name": (0, "c", ["workspace_id", "name", "updated_at"]),
    },
    "session_outcomes": {
        "ix_session_outcomes_session": (0, "c", ["workspace_id", "session_id"]),
    },
    "recallbench_store": {},
    # m011
    "annotations": {
        "sqlite_autoindex_annotations_1": (
            1,
            "u",
            ["workspace_id", "query_id", "doc_id", "annotator"],
        ),
    },
    "adjudications": {
        "sqlite_autoindex_adjudications_1": (1, "u", ["workspace_id", "query_id", "doc_id"]),
    },
    "annotation_events": {
        "ix_annotation_events_pair": (
            0,
            "c",
            ["workspace_id", "query_id", "doc_id", "created_at"],
        ),
    },
    # m015
    "eval_run_statistics": {
        "sqlite_autoindex_eval_run_statistics_1": (
            1,
            "pk",
            ["run_id", "measure", "settings"],
        ),
    },
}

RUN_FK = [("eval_runs", "run_id", "id", "NO ACTION", "CASCADE")]
SQLITE_FOREIGN_KEYS = {
    # (table, from, to, on_update, on_delete)
    "schema_migrations": [],
    "eval_runs": [],
    "eval_measures": RUN_FK,
    "eval_queries": RUN_FK,
    "eval_query_values": RUN_FK,
    "query_log": [],
    "feedback_events": [],
    "judgments": [],
    "ab_tests": [],
    "shadow_runs": [("ab_tests", "ab_test_id", "id", "NO ACTION", "CASCADE")],
    "judge_cache": [],
    "pairwise_preferences": [],
    "shadow_tests": [],
    "shadow_decisions": [("shadow_tests", "test_id", "id", "NO ACTION", "CASCADE")],
    "shadow_checkpoints": [("shadow_tests", "test_id", "id", "NO ACTION", "CASCADE")],  # m016
    "feature_flags": [],
    "session_outcomes": [],
    "recallbench_store": [],
    "annotations": [],
    "adjudications": [],
    "annotation_events": [],
    "eval_run_statistics": RUN_FK,  # m015
}

SQLITE_CHECKS = {
    # constraint name -> condition, as written in sqlite_master
    "ck_feedback_events_kind": "kind IN ('read_after_search', 're_search', 'scroll_past', "
    "'reference', 'validated_useful', 'validated_not_useful')",
    "ck_judgments_grade": "grade BETWEEN 0 AND 3",
    # widened by m004 (SQLite rebuilt the table to change it)
    "ck_judgments_source": "source IN ('manual', 'implicit', 'bootstrapped', 'validated', 'llm')",
    # m008
    "ck_shadow_tests_status": "status IN ('running', 'stopped', 'graduated', 'rolled_back')",
    "ck_shadow_tests_alpha": "alpha > 0 AND alpha < 1",
    "ck_shadow_decisions_decision": "decision IN ('start', 'continue', 'graduate', 'rollback', "
    "'stop')",
    "ck_feature_flags_percent": "percent >= 0 AND percent <= 100",
    "ck_session_outcomes_source": "source IN ('sdk', 'proxy')",
    "ck_session_outcomes_value": "outcome IS NOT NULL OR success IS NOT NULL",
    # m009
    "ck_recallbench_store_one_row": "id = 1",
    # m011
    "ck_annotations_grade": "grade BETWEEN 0 AND 3",
    "ck_adjudications_grade": "grade BETWEEN 0 AND 3",
    "ck_annotation_events_action": "action IN ('label', 'relabel', 'withdraw', 'adjudicate')",
}

SQLITE_STORAGE = {
    # how SQLite keeps each table: AUTOINCREMENT never reuses the id of a deleted run;
    # WITHOUT ROWID keeps the per-query rows in their key's b-tree (a third less disk)
    "schema_migrations": "rowid",
    "eval_runs": "rowid autoincrement",
    "eval_measures": "rowid",
    "eval_queries": "without rowid",
    "eval_query_values": "without rowid",
    "query_log": "rowid",
    "feedback_events": "rowid",
    "judgments": "rowid",
    "ab_tests": "rowid",
    "shadow_runs": "rowid",
    "judge_cache": "rowid",
    "pairwise_preferences": "rowid",
    "shadow_tests": "rowid",
    "shadow_decisions": "rowid",
    "shadow_checkpoints": "rowid",  # m016
    "feature_flags": "rowid",
    "session_outcomes": "rowid",
    "recallbench_store": "rowid",
    "annotations": "rowid",
    "adjudications": "rowid",
    "annotation_events": "rowid",
    "eval_run_statistics": "rowid",  # m015
}


def _storage(sql: str) -> str:
    if sql.rstrip().endswith("WITHOUT ROWID"):
        return "without rowid"
    return "rowid autoincrement" if "PRIMARY KEY AUTOINCREMENT" in sql else "rowid"


def sqlite_schema(db: sqlite3.Connection) -> dict[str, Any]:
    """Tables, columns, indexes, foreign keys, CHECKs and storage of a SQLite database."""
    tables = [
        row[0]
        for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    found: dict[str, Any] = {"tables": tables, "columns": {}, "indexes": {}, "foreign_keys": {}}
    for table in tables:
        if table == "sqlite_sequence":
            continue
        found["columns"][table] = [
            tuple(row[1:]) for row in db.execute(f"PRAGMA table_info({table})")
        ]
        indexes = {}
        for _, name, unique, origin, _partial in db.execute(f"PRAGMA index_list({table})"):
            cols = [row[2] for row in db.execute(f"PRAGMA index_info({name})")]
            indexes[name] = (unique, origin, cols)
        found["indexes"][table] = indexes
        found["foreign_keys"][table] = [
            (row[2], row[3], row[4], row[5], row[6])
            for row in db.execute(f"PRAGMA foreign_key_list({table})")
        ]
    sql = dict(
        db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'"
        )
    )
    found["storage"] = {name: _storage(text) for name, text in sql.items()}
    found["checks"] = {
        match[0]: match[1]
        for text in sql.values()
        for match in re.findall(r"CONSTRAINT (\w+) CHECK \((.*)\),? *$", text, re.MULTILINE)
    }
    return found


# ---------------------------------------------------------------- PostgreSQL

TS = "timestamp with time zone"
WS = ("workspace_id", "text", "NO", "'default'::text")


def _serial(table: str) -> tuple[str, str, str, str]:
    return ("id", "bigint", "NO", f"nextval('{table}_id_seq'::regclass)")


POSTGRES_COLUMNS = {
    # (name, data_type, is_nullable, column_default) as information_schema.columns has them
    "schema_migrations": [
        ("id", "integer", "NO", None),
        ("name", "text", "NO", None),
        ("applied_at", TS, "NO", None),
    ],
    "eval_runs": [
        _serial("eval_runs"),
        WS,
        ("system", "text", "NO", None),
        ("system_settings", "text", "NO", None),
        ("dataset_name", "text", "NO", None),
        ("dataset_version", "text", "NO", None),
        ("dataset_sha256", "text", "NO", None),
        ("dataset_loader", "text", "YES", None),
        ("relevance_threshold", "integer", "NO", None),
        ("k", "integer", "YES", None),
        ("recallbench_version", "text", "NO", None),
        ("git_revision", "text", "YES", None),
        ("created_at", TS, "NO", None),
        ("recorded_at", TS, "NO", None),
        ("accepted", "boolean", "NO", "false"),
        ("accepted_at", TS, "YES", None),
        ("queries", "integer", "NO", None),
        ("evaluated", "integer", "NO", None),
        ("failed", "integer", "NO", None),
        ("missing", "integer", "NO", None),
        ("no_relevant", "integer", "NO", None),
        ("latency_p50", "double precision", "YES", None),
        ("latency_p95", "double precision", "YES", None),
        ("latency_p99", "double precision", "YES", None),
        ("source", "text", "YES", None),
        ("rules", "text", "NO", None),
        # added by m005 (ALTER TABLE appends them)
        ("judge_model", "text", "YES", None),
        ("judge_prompt", "text", "YES", None),
        ("llm_labels", "integer", "YES", None),
        ("judge_failure_rate", "double precision", "YES", None),
        ("judge_unreliable", "boolean", "YES", None),
        ("judge_tokens", "integer", "YES", None),
        ("judge_cost", "double precision", "YES", None),
    ],
    "eval_measures": [
        ("run_id", "bigint", "NO", None),
        WS,
        ("measure", "text", "NO", None),
        ("mean", "double precision", "YES", None),
        ("higher_is_better", "boolean", "NO", None),
        ("position", "integer", "NO", None),
    ],
    "eval_queries": [
        ("run_id", "bigint", "NO", None),
        WS,
        ("query_id", "text", "NO", None),
        ("position", "integer", "NO", None),
        ("category", "text", "YES", None),
        ("intent", "text", "YES", None),
        ("status", "text", "NO", None),
        ("latency_ms", "double precision", "YES", None),
    ],
    "eval_query_values": [
        ("run_id", "bigint", "NO", None),
        WS,
        ("query_id", "text", "NO", None),
        ("measure", "text", "NO", None),
        ("value", "double precision", "YES", None),
    ],
    "query_log": [
        _serial("query_log"),
        WS,
        ("query_id", "text", "NO", None),
        ("text", "text", "NO", None),
        ("intent", "text", "YES", None),
        ("mode", "text", "YES", None),
        ("session_id", "text", "YES", None),
        ("tool", "text", "YES", None),
        ("results", "text", "NO", None),
        ("channels", "text", "NO", None),
        ("texts", "text", "NO", None),
        ("latency_ms", "double precision", "YES", None),
        ("trace_id", "text", "YES", None),
        ("created_at", TS, "NO", None),
        ("golden", "boolean", "NO", "false"),
        ("category", "text", "YES", None),
    ],
    "feedback_events": [
        _serial("feedback_events"),
        WS,
        ("query_id", "text", "NO", None),
        ("kind", "text", "NO", None),
        ("doc_id", "text", "YES", None),
        ("rank", "integer", "YES", None),
        ("session_id", "text", "YES", None),
        ("created_at", TS, "NO", None),
        ("event_id", "text", "YES", None),  # added by m012
    ],
    "judgments": [
        _serial("judgments"),
        WS,
        ("query_id", "text", "NO", None),
        ("doc_id", "text", "NO", None),
        ("grade", "integer", "NO", None),
        ("source", "text", "NO", None),
        ("annotator", "text", "YES", None),
        ("confidence", "double precision", "YES", None),
        ("created_at", TS, "NO", None),
    ],
    "ab_tests": [
        _serial("ab_tests"),
        WS,
        ("name", "text", "NO", None),
        ("control", "text", "NO", None),
        ("treatment", "text", "NO", None),
        ("measure", "text", "NO", None),
        ("status", "text", "NO", None),
        ("sprt_state", "text", "YES", None),
        ("beta_state", "text", "YES", None),
        ("created_at", TS, "NO", None),
        ("updated_at", TS, "NO", None),
        ("decided_at", TS, "YES", None),
        ("decision", "text", "YES", None),
    ],
    "shadow_runs": [
        _serial("shadow_runs"),
        WS,
        ("ab_test_id", "bigint", "YES", None),
        ("query_id", "text", "NO", None),
        ("control_results", "text", "NO", None),
        ("treatment_results", "text", "NO", None),
        ("control_latency_ms", "double precision", "YES", None),
        ("treatment_latency_ms", "double precision", "YES", None),
        ("kendall_tau", "double precision", "YES", None),
        ("jaccard", "double precision", "YES", None),
        ("top1_changed", "boolean", "YES", None),
        ("created_at", TS, "NO", None),
        # added by m007 (ALTER TABLE appends them)
        ("control_error", "text", "YES", None),
        ("treatment_error", "text", "YES", None),
        # added by m008
        ("interleaved", "text", "YES", None),
        ("session_id", "text", "YES", None),
        ("control", "text", "YES", None),
        ("treatment", "text", "YES", None),
        # added by m010
        ("interleaved_credited", "integer", "YES", None),
        ("query_key", "text", "YES", None),  # m014
    ],
    "judge_cache": [
        WS,
        ("cache_key", "text", "NO", None),
        ("task", "text", "NO", None),
        ("prompt_version", "text", "NO", None),
        ("model", "text", "NO", None),
        ("params", "text", "NO", None),
        ("input_sha256", "text", "NO", None),
        ("response", "text", "NO", None),
        ("parsed", "text", "YES", None),
        ("raw", "text", "YES", None),
        ("value", "text", "YES", None),
        ("score", "double precision", "YES", None),
        ("failure", "text", "YES", None),
        ("answered_by", "text", "YES", None),
        ("tokens_in", "integer", "YES", None),
        ("tokens_out", "integer", "YES", None),
        ("latency_ms", "double precision", "YES", None),
        ("cost", "double precision", "YES", None),
        ("created_at", TS, "NO", None),
    ],
    "pairwise_preferences": [
        _serial("pairwise_preferences"),
        ("workspace_id", "text", "NO", None),  # no default: the dashboard's table had none
        ("item", "text", "NO", None),
        ("query_text", "text", "NO", None),
        ("first_label", "text", "NO", None),
        ("first_results", "text", "NO", None),
        ("second_label", "text", "NO", None),
        ("second_results", "text", "NO", None),
        ("preferred", "text", "NO", None),
        ("shown", "text", "NO", None),
        ("annotator", "text", "NO", None),
        ("created_at", TS, "NO", None),
    ],
    "shadow_tests": [
        _serial("shadow_tests"),
        WS,
        ("name", "text", "NO", None),
        ("control", "text", "NO", None),
        ("treatment", "text", "NO", None),
        ("measure", "text", "NO", None),
        ("guardrails", "text", "NO", None),
        ("rule", "text", "NO", None),
        ("alpha", "double precision", "NO", None),
        ("started_at", TS, "NO", None),
        ("stopped_at", TS, "YES", None),
        ("status", "text", "NO", None),
    ],
    "shadow_checkpoints": [  # m016
        ("test_id", "bigint", "NO", None),
        WS,
        ("covered_until", TS, "NO", None),
        ("marks", "text", "NO", None),
        ("progress", "bytea", "NO", None),
        ("written_at", TS, "NO", None),
    ],
    "shadow_decisions": [
        _serial("shadow_decisions"),
        WS,
        ("test_id", "bigint", "NO", None),
        ("at", TS, "NO", None),
        ("decision", "text", "NO", None),
        ("evidence", "text", "NO", None),
        ("actor", "text", "YES", None),
    ],
    "feature_flags": [
        _serial("feature_flags"),
        WS,
        ("name", "text", "NO", None),
        ("variant", "text", "NO", None),
        ("percent", "double precision", "NO", None),
        ("fallback", "text", "YES", None),
        ("updated_at", TS, "NO", None),
    ],
    "session_outcomes": [
        _serial("session_outcomes"),
        WS,
        ("session_id", "text", "NO", None),
        ("outcome", "double precision", "YES", None),
        ("success", "boolean", "YES", None),
        ("note", "text", "YES", None),
        ("recorded_at", TS, "NO", None),
        ("source", "text", "NO", None),
    ],
    "recallbench_store": [
        ("id", "integer", "NO", None),
        ("recallbench_version", "text", "NO", None),
        ("marked_at", TS, "NO", None),
    ],
    # m011
    "annotations": [
        _serial("annotations"),
        WS,
        ("query_id", "text", "NO", None),
        ("doc_id", "text", "NO", None),
        ("annotator", "text", "NO", None),
        ("grade", "integer", "YES", None),
        ("version", "integer", "NO", None),
        ("updated_at", TS, "NO", None),
    ],
    "adjudications": [
        _serial("adjudications"),
        WS,
        ("query_id", "text", "NO", None),
        ("doc_id", "text", "NO", None),
        ("adjudicator", "text", "NO", None),
        ("grade", "integer", "YES", None),
        ("version", "integer", "NO", None),
        ("updated_at", TS, "NO", None),
    ],
    "annotation_events": [
        _serial("annotation_events"),
        WS,
        ("query_id", "text", "NO", None),
        ("doc_id", "text", "NO", None),
        ("annotator", "text", "NO", None),
        ("action", "text", "NO", None),
        ("adjudication", "boolean", "NO", None),
        ("old_grade", "integer", "YES", None),
        ("new_grade", "integer", "YES", None),
        ("created_at", TS, "NO", None),
    ],
    # m015
    "eval_run_statistics": [
        ("run_id", "bigint", "NO", None),
        WS,
        ("measure", "text", "NO", None),
        ("settings", "text", "NO", None),
        ("n", "integer", "NO", None),
        ("low", "double precision", "YES", None),
        ("high", "double precision", "YES", None),
        ("small", "boolean", "NO", None),
        ("reason", "text", "YES", None),
        ("previous_run_id", "bigint", "YES", None),
        ("change_n", "integer", "YES", None),
        ("change_delta", "double precision", "YES", None),
        ("change_p", "double precision", "YES", None),
    ],
}


def _btree(name: str, table: str, columns: str, unique: bool = False) -> str:
    kind = "UNIQUE INDEX" if unique else "INDEX"
    return f"CREATE {kind} {name} ON public.{table} USING btree ({columns})"


POSTGRES_INDEXES = {
    # name -> definition, as pg_indexes has it (primary keys and UNIQUE constraints included)
    "schema_migrations": {
        "schema_migrations_pkey": _btree("schema_migrations_pkey", "schema_migrations", "id", True)
    },
    "eval_runs": {
        "eval_runs_pkey": _btree("eval_runs_pkey", "eval_runs", "id", True),
        "ix_eval_runs_series": _btree(
            "ix_eval_runs_series", "eval_runs", "workspace_id, system, dataset_sha256, created_at"
        ),
    },
    "eval_measures": {
        "eval_measures_pkey": _btree("eval_measures_pkey", "eval_measures", "run_id, measure", True)
    },
    "eval_queries": {
        "eval_queries_pkey": _btree("eval_queries_pkey", "eval_queries", "run_id, query_id", True)
    },
    "eval_query_values": {
        "eval_query_values_pkey": _btree(
            "eval_query_values_pkey", "eval_query_values", "run_id, query_id, measure", True
        )
    },
    "query_log": {
        "query_log_pkey": _btree("query_log_pkey", "query_log", "id", True),
        "uq_query_log_query": _btree(
            "uq_query_log_query", "query_log", "workspace_id, query_id", True
        ),
        "ix_query_log_created": _btree(
            "ix_query_log_created", "query_log", "workspace_id, created_at"
        ),
        "ix_query_log_session": _btree(
            "ix_query_log_session", "query_log", "workspace_id, session_id"
        ),
    },
    "feedback_events": {
        "feedback_events_pkey": _btree("feedback_events_pkey", "feedback_events", "id", True),
        "ix_feedback_events_query": _btree(
            "ix_feedback_events_query", "feedback_events", "workspace_id, query_id"
        ),
        "uq_feedback_events_event": _btree(  # m012
            "uq_feedback_events_event", "feedback_events", "workspace_id, event_id", True
        ),
        "ix_feedback_events_created": _btree(  # m013
            "ix_feedback_events_created", "feedback_events", "workspace_id, created_at, id"
        ),
        "ix_feedback_events_kind": _btree(  # m013
            "ix_feedback_events_kind", "feedback_events", "workspace_id, kind, created_at, id"
        ),
    },
    "judgments": {
        "judgments_pkey": _btree("judgments_pkey", "judgments", "id", True),
        "uq_judgments_judgment": _btree(
            "uq_judgments_judgment", "judgments", "workspace_id, query_id, doc_id, source", True
        ),
    },
    "ab_tests": {
        "ab_tests_pkey": _btree("ab_tests_pkey", "ab_tests", "id", True),
        "uq_ab_tests_name": _btree("uq_ab_tests_name", "ab_tests", "workspace_id, name", True),
    },
    "shadow_runs": {
        "shadow_runs_pkey": _btree("shadow_runs_pkey", "shadow_runs", "id", True),
        "ix_shadow_runs_created": _btree(
            "ix_shadow_runs_created", "shadow_runs", "workspace_id, created_at"
        ),
        "ix_shadow_runs_ab_test": _btree(
            "ix_shadow_runs_ab_test", "shadow_runs", "ab_test_id, created_at"
        ),
        "uq_shadow_runs_query": _btree(  # m012
            "uq_shadow_runs_query", "shadow_runs", "workspace_id, query_id", True
        ),
    },
    "judge_cache": {
        "judge_cache_pkey": _btree(
            "judge_cache_pkey", "judge_cache", "workspace_id, cache_key", True
        ),
        "ix_judge_cache_task": _btree(
            "ix_judge_cache_task", "judge_cache", "workspace_id, task, prompt_version, model"
        ),
    },
    "pairwise_preferences": {
        "pairwise_preferences_pkey": _btree(
            "pairwise_preferences_pkey", "pairwise_preferences", "id", True
        ),
        "uq_pairwise_preference": _btree(
            "uq_pairwise_preference", "pairwise_preferences", "workspace_id, item, annotator", True
        ),
    },
    "shadow_tests": {
        "shadow_tests_pkey": _btree("shadow_tests_pkey", "shadow_tests", "id", True),
        "uq_shadow_tests_name": _btree(
            "uq_shadow_tests_name", "shadow_tests", "workspace_id, name", True
        ),
    },
    "shadow_checkpoints": {  # m016
        "shadow_checkpoints_pkey": _btree(
            "shadow_checkpoints_pkey", "shadow_checkpoints", "test_id", True
        ),
    },
    "shadow_decisions": {
        "shadow_decisions_pkey": _btree("shadow_decisions_pkey", "shadow_decisions", "id", True),
        "ix_shadow_decisions_test": _btree(
            "ix_shadow_decisions_test", "shadow_decisions", "test_id, at"
        ),
    },
    "feature_flags": {
        "feature_flags_pkey": _btree("feature_flags_pkey", "feature_flags", "id", True),
        "ix_feature_flags_name": _btree(
            "ix_feature_flags_name", "feature_flags", "workspace_id, name, updated_at"
        ),
    },
    "session_outcomes": {
        "session_outcomes_pkey": _btree("session_outcomes_pkey", "session_outcomes", "id", True),
        "ix_session_outcomes_session": _btree(
            "ix_session_outcomes_session", "session_outcomes", "workspace_id, session_id"
        ),
    },
    "recallbench_store": {
        "recallbench_store_pkey": _btree("recallbench_store_pkey", "recallbench_store", "id", True)
    },
    # m011
    "annotations": {
        "annotations_pkey": _btree("annotations_pkey", "annotations", "id", True),
        "uq_annotations_label": _btree(
            "uq_annotations_label", "annotations", "workspace_id, query_id, doc_id, annotator", True
        ),
    },
    "adjudications": {
        "adjudications_pkey": _btree("adjudications_pkey", "adjudications", "id", True),
        "uq_adjudications_pair": _btree(
            "uq_adjudications_pair", "adjudications", "workspace_id, query_id, doc_id", True
        ),
    },
    "annotation_events": {
        "annotation_events_pkey": _btree("annotation_events_pkey", "annotation_events", "id", True),
        "ix_annotation_events_pair": _btree(
            "ix_annotation_events_pair",
            "annotation_events",
            "workspace_id, query_id, doc_id, created_at",
        ),
    },
    # m015
    "eval_run_statistics": {
        "eval_run_statistics_pkey": _btree(
            "eval_run_statistics_pkey", "eval_run_statistics", "run_id, measure, settings", True
        ),
    },
}

RUN_FK_PG = "FOREIGN KEY (run_id) REFERENCES eval_runs(id) ON DELETE CASCADE"
POSTGRES_CONSTRAINTS = {
    # name -> (kind, definition) as pg_constraint / pg_get_constraintdef have them;
    # p primary key, u unique, f foreign key, c check
    "schema_migrations": {"schema_migrations_pkey": ("p", "PRIMARY KEY (id)")},
    "eval_runs": {"eval_runs_pkey": ("p", "PRIMARY KEY (id)")},
    "eval_measures": {
        "eval_measures_pkey": ("p", "PRIMARY KEY (run_id, measure)"),
        "eval_measures_run_id_fkey": ("f", RUN_FK_PG),
    },
    "eval_queries": {
        "eval_queries_pkey": ("p", "PRIMARY KEY (run_id, query_id)"),
        "eval_queries_run_id_fkey": ("f", RUN_FK_PG),
    },
    "eval_query_values": {
        "eval_query_values_pkey": ("p", "PRIMARY KEY (run_id, query_id, measure)"),
        "eval_query_values_run_id_fkey": ("f", RUN_FK_PG),
    },
    "query_log": {
        "query_log_pkey": ("p", "PRIMARY KEY (id)"),
        "uq_query_log_query": ("u", "UNIQUE (workspace_id, query_id)"),
    },
    "feedback_events": {
        "feedback_events_pkey": ("p", "PRIMARY KEY (id)"),
        "ck_feedback_events_kind": (
            "c",
            "CHECK ((kind = ANY (ARRAY['read_after_search'::text, 're_search'::text, "
            "'scroll_past'::text, 'reference'::text, 'validated_useful'::text, "
            "'validated_not_useful'::text])))",
        ),
    },
    "judgments": {
        "judgments_pkey": ("p", "PRIMARY KEY (id)"),
        "uq_judgments_judgment": ("u", "UNIQUE (workspace_id, query_id, doc_id, source)"),
        "ck_judgments_grade": ("c", "CHECK (((grade >= 0) AND (grade <= 3)))"),
        "ck_judgments_source": (
            "c",
            "CHECK ((source = ANY (ARRAY['manual'::text, 'implicit'::text, "
            "'bootstrapped'::text, 'validated'::text, 'llm'::text])))",
        ),
    },
    "ab_tests": {
        "ab_tests_pkey": ("p", "PRIMARY KEY (id)"),
        "uq_ab_tests_name": ("u", "UNIQUE (workspace_id, name)"),
    },
    "shadow_runs": {
        "shadow_runs_pkey": ("p", "PRIMARY KEY (id)"),
        "shadow_runs_ab_test_id_fkey": (
            "f",
            "FOREIGN KEY (ab_test_id) REFERENCES ab_tests(id) ON DELETE CASCADE",
        ),
    },
    "judge_cache": {"judge_cache_pkey": ("p", "PRIMARY KEY (workspace_id, cache_key)")},
    "pairwise_preferences": {
        "pairwise_preferences_pkey": ("p", "PRIMARY KEY (id)"),
        "uq_pairwise_preference": ("u", "UNIQUE (workspace_id, item, annotator)"),
    },
    "shadow_tests": {
        "shadow_tests_pkey": ("p", "PRIMARY KEY (id)"),
        "uq_shadow_tests_name": ("u", "UNIQUE (workspace_id, name)"),
        "ck_shadow_tests_status": (
            "c",
            "CHECK ((status = ANY (ARRAY['running'::text, 'stopped'::text, "
            "'graduated'::text, 'rolled_back'::text])))",
        ),
        "ck_shadow_tests_alpha": (
            "c",
            "CHECK (((alpha > (0)::double precision) AND (alpha < (1)::double precision)))",
        ),
    },
    "shadow_checkpoints": {  # m016
        "shadow_checkpoints_pkey": ("p", "PRIMARY KEY (test_id)"),
        "shadow_checkpoints_test_id_fkey": (
            "f",
            "FOREIGN KEY (test_id) REFERENCES shadow_tests(id) ON DELETE CASCADE",
        ),
    },
    "shadow_decisions": {
        "shadow_decisions_pkey": ("p", "PRIMARY KEY (id)"),
        "shadow_decisions_test_id_fkey": (
            "f",
            "FOREIGN KEY (test_id) REFERENCES shadow_tests(id) ON DELETE CASCADE",
        ),
        "ck_shadow_decisions_decision": (
            "c",
            "CHECK ((decision = ANY (ARRAY['start'::text, 'continue'::text, "
            "'graduate'::text, 'rollback'::text, 'stop'::text])))",
        ),
    },
    "feature_flags": {
        "feature_flags_pkey": ("p", "PRIMARY KEY (id)"),
        "ck_feature_flags_percent": (
            "c",
            "CHECK (((percent >= (0)::double precision) AND (percent <= (100)::double precision)))",
        ),
    },
    "session_outcomes": {
        "session_outcomes_pkey": ("p", "PRIMARY KEY (id)"),
        "ck_session_outcomes_source": (
            "c",
            "CHECK ((source = ANY (ARRAY['sdk'::text, 'proxy'::text])))",
        ),
        "ck_session_outcomes_value": (
            "c",
            "CHECK (((outcome IS NOT NULL) OR (success IS NOT NULL)))",
        ),
    },
    "recallbench_store": {
        "recallbench_store_pkey": ("p", "PRIMARY KEY (id)"),
        "ck_recallbench_store_one_row": ("c", "CHECK ((id = 1))"),
    },
    # m011
    "annotations": {
        "annotations_pkey": ("p", "PRIMARY KEY (id)"),
        "ck_annotations_grade": ("c", "CHECK (((grade >= 0) AND (grade <= 3)))"),
        "uq_annotations_label": ("u", "UNIQUE (workspace_id, query_id, doc_id, annotator)"),
    },
    "adjudications": {
        "adjudications_pkey": ("p", "PRIMARY KEY (id)"),
        "ck_adjudications_grade": ("c", "CHECK (((grade >= 0) AND (grade <= 3)))"),
        "uq_adjudications_pair": ("u", "UNIQUE (workspace_id, query_id, doc_id)"),
    },
    "annotation_events": {
        "annotation_events_pkey": ("p", "PRIMARY KEY (id)"),
        "ck_annotation_events_action": (
            "c",
            "CHECK ((action = ANY (ARRAY['label'::text, 'relabel'::text, 'withdraw'::text, "
            "'adjudicate'::text])))",
        ),
    },
    # m015
    "eval_run_statistics": {
        "eval_run_statistics_pkey": ("p", "PRIMARY KEY (run_id, measure, settings)"),
        "eval_run_statistics_run_id_fkey": ("f", RUN_FK_PG),
    },
}

POSTGRES_SEQUENCES = [
    # (name, data_type): the serial ids are 64-bit
    ("ab_tests_id_seq", "bigint"),
    ("adjudications_id_seq", "bigint"),
    ("annotation_events_id_seq", "bigint"),
    ("annotations_id_seq", "bigint"),
    ("eval_runs_id_seq", "bigint"),
    ("feature_flags_id_seq", "bigint"),
    ("feedback_events_id_seq", "bigint"),
    ("judgments_id_seq", "bigint"),
    ("pairwise_preferences_id_seq", "bigint"),
    ("query_log_id_seq", "bigint"),
    ("session_outcomes_id_seq", "bigint"),
    ("shadow_decisions_id_seq", "bigint"),
    ("shadow_runs_id_seq", "bigint"),
    ("shadow_tests_id_seq", "bigint"),
]


def postgres_schema(connection: Any) -> dict[str, Any]:
    """Tables, columns, indexes, constraints and sequences of the ``public`` schema of a
    PostgreSQL database (``connection``: a psycopg connection)."""

    def rows(sql: str, *params: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in connection.execute(sql, params).fetchall()]

    tables = [
        row[0]
        for row in rows(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "ORDER BY table_name"
        )
    ]
    found: dict[str, Any] = {"tables": tables, "columns": {}, "indexes": {}, "constraints": {}}
    for table in tables:
        found["columns"][table] = rows(
            "SELECT column_name, data_type, is_nullable, column_default "
            "FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s "
            "ORDER BY ordinal_position",
            table,
        )
        found["indexes"][table] = dict(
            rows(
                "SELECT indexname, indexdef FROM pg_indexes "
                "WHERE schemaname = 'public' AND tablename = %s",
                table,
            )
        )
        found["constraints"][table] = {
            name: (kind, definition)
            for name, kind, definition in rows(
                "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = %s::regclass",
                f"public.{table}",
            )
        }
    found["sequences"] = rows(
        "SELECT sequence_name, data_type FROM information_schema.sequences "
        "WHERE sequence_schema = 'public' ORDER BY sequence_name"
    )
    return found
