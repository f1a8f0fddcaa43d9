"""Canonical JSON and the hashes built on it.

A decision binds to the hash of the arguments shown (`args_hash`); an audit event's
hash covers the canonical JSON of its fields (`event_canonical`), so anyone holding
an export can recompute it.
"""

import hashlib
import json


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def args_hash(arguments) -> str:
    return sha256_hex(canonical_json(arguments))


def event_canonical(*, run_id, tool_call_id, kind, actor_id, actor_label, payload, created_at, prev_hash) -> str:
    """What an audit event's hash covers: the canonical JSON of these eight fields."""
    return canonical_json(
        {
            "run": run_id,
            "tool_call": tool_call_id,
            "kind": kind,
            "actor": actor_id,
            "actor_label": actor_label,
            "payload": payload,
            "created_at": created_at.isoformat(),
            "prev_hash": prev_hash,
        }
    )


def event_hash(**fields) -> str:
    return sha256_hex(event_canonical(**fields))


def event_canonical_around(
    *, run_id, tool_call_id, kind, actor_id, actor_label, payload_json, created_at
) -> tuple[str, str]:
    """An event's canonical JSON in two parts, before and after its prev_hash's value, so that the hash can be
    computed where the previous hash is read: before + prev_hash + after is event_canonical(). `payload_json` is
    the payload's canonical JSON, which the caller stores too (serialised once for both). The keys are sorted:
    actor, actor_label, created_at, kind, payload, prev_hash, then only the run's and the call's ids."""
    fields = {"actor": actor_id, "actor_label": actor_label, "created_at": created_at.isoformat(), "kind": kind}
    ids = canonical_json({"run": run_id, "tool_call": tool_call_id})
    return f'{canonical_json(fields)[:-1]},"payload":{payload_json},"prev_hash":"', f'",{ids[1:]}'
