"""SQL schema of the memory graph: the seed's tables plus the FTS5 and sqlite-vec indexes."""

from __future__ import annotations

SCHEMA_VERSION = 1

NODE_TYPES = ("entity", "fact", "event", "opinion", "instruction", "plan")

SUBTYPES: dict[str, tuple[str, ...]] = {
    "entity": (
        "person",
        "org",
        "project",
        "place",
        "tool",
        "process",
        "document",
        "concept",
        "event",
        "account",
    ),
    "fact": ("definitional", "causal", "conditional", "comparative", "negation"),
    "event": ("action", "decision", "conversation", "incident", "outcome", "completed_plan"),
    "opinion": (),
    "instruction": ("instruction", "tool_usage", "rule", "process"),
    "plan": ("scheduled", "intended", "requested"),
}

# A forgotten memory is archived, not deleted: `superseded_by` holds this marker, so every path that skips
# replaced memories (search, retrieval, the vector index's `active` flag) skips it too, and it can be restored.
ARCHIVED = "archived"

# Scope defaults from the seed: instructions 0.5, plans 0.3, nothing for the rest.
DEFAULT_SCOPE: dict[str, float] = {"instruction": 0.5, "plan": 0.3}

# Tables and indexes exactly as the seed's "Database Schema", then what search needs.
CORE_DDL = """
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY,
    node_type TEXT NOT NULL,
    subtype TEXT,
    content TEXT NOT NULL,
    salience REAL DEFAULT 1.0,
    confidence REAL DEFAULT 1.0,
    source TEXT DEFAULT 'user',
    created_at TEXT DEFAULT (datetime('now')),
    valid_from TEXT,
    valid_until TEXT,
    superseded_by TEXT,
    attributes TEXT DEFAULT '{}',
    can_summarize INTEGER DEFAULT 1,
    scope REAL DEFAULT NULL
);
CREATE TABLE IF NOT EXISTS edges (
    id TEXT PRIMARY KEY,
    source_id TEXT NOT NULL REFERENCES nodes(id),
    target_id TEXT NOT NULL REFERENCES nodes(id),
    edge_type TEXT NOT NULL,
    attributes TEXT DEFAULT '{}',
    created_at TEXT DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS embeddings (
    node_id TEXT PRIMARY KEY REFERENCES nodes(id),
    node_type TEXT NOT NULL,
    vector BLOB NOT NULL,
    created_at TEXT DEFAULT (datetime('now'))
);
CREATE INDEX IF NOT EXISTS idx_nodes_type ON nodes(node_type);
CREATE INDEX IF NOT EXISTS idx_nodes_subtype ON nodes(subtype);
CREATE INDEX IF NOT EXISTS idx_edges_source ON edges(source_id);
CREATE INDEX IF NOT EXISTS idx_edges_target ON edges(target_id);
CREATE INDEX IF NOT EXISTS idx_edges_type ON edges(edge_type);
CREATE INDEX IF NOT EXISTS idx_nodes_created ON nodes(created_at);
CREATE INDEX IF NOT EXISTS idx_nodes_entity_name ON nodes(lower(content)) WHERE node_type = 'entity';

CREATE TABLE IF NOT EXISTS octy_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- BM25 keyword index over node content, kept in sync by triggers (external content table).
CREATE VIRTUAL TABLE IF NOT EXISTS nodes_fts USING fts5(
    content, content='nodes', content_rowid='rowid', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS nodes_fts_ai AFTER INSERT ON nodes BEGIN
    INSERT INTO nodes_fts(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER IF NOT EXISTS nodes_fts_ad AFTER DELETE ON nodes BEGIN
    INSERT INTO nodes_fts(nodes_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER IF NOT EXISTS nodes_fts_au AFTER UPDATE OF content ON nodes BEGIN
    INSERT INTO nodes_fts(nodes_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO nodes_fts(rowid, content) VALUES (new.rowid, new.content);
END;
"""


# Without it SQLite answers "is this edge already there?" through idx_edges_type, scanning every edge of
# that type (tens of thousands of 'about' edges in a large graph).
EDGE_PAIR_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_edges_pair ON edges(source_id, target_id, edge_type)"
)

# Without it every "which nodes are superseded / replaced this one?" scans all nodes: the service's
# vector cache asks after each write, and superseding asks on every version change. Partial, so it
# holds only the few replaced nodes; with `id`, those questions are answered from the index alone.
SUPERSEDED_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_nodes_superseded ON nodes(superseded_by, id) "
    "WHERE superseded_by IS NOT NULL"
)


def vec_ddl(dim: int) -> str:
    """The sqlite-vec index: one row per node (rowid = nodes.rowid), filterable by type and activity."""
    return (
        "CREATE VIRTUAL TABLE IF NOT EXISTS vec_nodes USING vec0("
        f"embedding float[{int(dim)}] distance_metric=cosine, node_type text, active integer)"
    )
