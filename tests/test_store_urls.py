"""Store URLs are parsed by SQLAlchemy's parser and shown only masked; an ambiguous password
is refused before any connection or name lookup; new SQLite stores are owner-only."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from recallbench.core import ConfigError
from recallbench.store import check_store, open_store
from recallbench.store._engine import display_url, parse_store_url, transaction


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:s3cret@db.example/rb", "postgresql://u:***@db.example/rb"),
        ("postgresql://u:s3@cret@db.example/rb", "postgresql://u:***@db.example/rb"),
        ("postgresql://u:s3/x@cret@db.example/rb", "postgresql://u:***@db.example/rb"),
        ("postgresql://u:s3cret@db.example:abc/rb", "postgresql://u:***@db.example:abc/rb"),
        ("postgresql://u:s3@cret@db.example:abc/rb", "postgresql://u:***@db.example:abc/rb"),
        ("postgresql://u:s3%40cret@db.example/rb", "postgresql://u:***@db.example/rb"),
    ],
)
def test_display_never_shows_any_part_of_the_password(url: str, shown: str) -> None:
    assert display_url(url) == shown
    assert "s3" not in display_url(url) and "cret" not in display_url(url)


def test_an_encoded_at_sign_is_the_password(tmp_path: Path) -> None:
    parsed = parse_store_url("postgresql://u:p%40ss@db.example:5433/rb")
    assert (parsed.password, parsed.host, parsed.port) == ("p@ss", "db.example", 5433)


def test_an_unencoded_at_sign_is_refused_before_any_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked_up: list[Any] = []

    def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
        looked_up.append(args)
        raise AssertionError("no name may be looked up")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(ConfigError, match="percent-encode it as %40") as error:
        open_store("postgresql://rb:pa@zz@tail.example:5432/rb")
    assert "zz" not in str(error.value) and "pa@" not in str(error.value)
    assert "postgresql://rb:***@tail.example:5432/rb" in str(error.value)
    assert looked_up == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://u:pw@host:abc/rb", "the port is not a number"),
        ("postgresql://u:pw@host:0/rb", "port 0 is out of range"),
        ("postgresql://u:pw@host:65536/rb", "port 65536 is out of range"),
    ],
)
def test_a_bad_port_names_the_url_masked(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        open_store(url)
    assert "postgresql://u:***@host:" in str(error.value)
    assert "pw" not in str(error.value)


def test_check_store_opens_and_closes_or_says_why(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    assert check_store(url) == url
    with open_store(url) as store:
        assert store.runs() == []
    with pytest.raises(ConfigError, match="cannot open the history store"):
        check_store("postgresql://ci:s3cret@127.0.0.1:1/recallbench")  # nothing listens on 1


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_store_and_its_wal_files_are_owner_only(tmp_path: Path) -> None:
    database = tmp_path / "new" / "history.db"
    previous = os.umask(0o022)  # the common default, under which files were 0644
    try:
        store = open_store(f"sqlite:///{database}")
        with transaction(store._engine, write=True) as connection:  # WAL files exist now
            connection.execute(text("SELECT 1"))
            wal = [Path(f"{database}-wal"), Path(f"{database}-shm")]
            assert all(path.exists() for path in wal)
            assert {path.name: _mode(path) for path in [database, *wal]} == {
                path.name: 0o600 for path in [database, *wal]
            }
        store.close()
    finally:
        os.umask(previous)


def test_an_existing_sqlite_store_keeps_its_mode(tmp_path: Path) -> None:
    database = tmp_path / "shared.db"
    with open_store(f"sqlite:///{database}"):
        pass
    database.chmod(0o640)  # its owner shares it with a group on purpose
    with open_store(f"sqlite:///{database}") as store:
        assert store.runs() == []
    assert _mode(database) == 0o640
