"""Where an adapter keeps, across processes, which ReviewHub call stands for which framework tool call, and the
paused run's serialized state where the framework has no persistence of its own (a RunState, a message
history). One SQLite file; any process that opens it can resume the run."""

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

SCHEMA = """
create table if not exists reviewhub_calls (
    thread_id text not null, tool_call_id text not null, call_id integer not null,
    primary key (thread_id, tool_call_id));
create table if not exists reviewhub_states (thread_id text primary key, state text not null);
"""


class Store:
    """`Store("agent.sqlite3")`: the pending calls and the saved state of each thread."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        with closing(self._connect()) as conn, conn:
            conn.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30)
        conn.execute("pragma journal_mode=wal")
        return conn

    def remember(self, thread_id: str, tool_call_id: str, call_id: int) -> None:
        with closing(self._connect()) as conn, conn:
            conn.execute("insert or replace into reviewhub_calls values (?, ?, ?)", (thread_id, tool_call_id, call_id))

    def call_id(self, thread_id: str, tool_call_id: str) -> int | None:
        with closing(self._connect()) as conn:
            row = conn.execute(
                "select call_id from reviewhub_calls where thread_id = ? and tool_call_id = ?",
                (thread_id, tool_call_id),
            ).fetchone()
        return row[0] if row else None

    def calls(self, thread_id: str) -> dict[str, int]:
        with closing(self._connect()) as conn:
            rows = conn.execute(
                "select tool_call_id, call_id from reviewhub_calls where thread_id = ?", (thread_id,)
            ).fetchall()
        return dict(rows)

    def save_state(self, thread_id: str, state: Any) -> None:
        text = state if isinstance(state, str) else json.dumps(state)
        with closing(self._connect()) as conn, conn:
            conn.execute("insert or replace into reviewhub_states values (?, ?)", (thread_id, text))

    def state(self, thread_id: str) -> str | None:
        with closing(self._connect()) as conn:
            row = conn.execute("select state from reviewhub_states where thread_id = ?", (thread_id,)).fetchone()
        return row[0] if row else None
