"""The PostgreSQL schema of one project, as recorded migrations.

The tables are the SQLite ones (the seed's `nodes`, `edges`, `embeddings`, plus `octy_meta`), with the
search indexes PostgreSQL has instead of FTS5 and vec0: a stored `tsvector` with a GIN index for the
keyword half, and a pgvector column with HNSW indexes (cosine) for the vector half, one graph per
partition of `seq` since migration 3. `seq` stands in for SQLite's rowid (insertion order).
`octy_state.revision` moves on every write; each write transaction takes its row first, so writers
queue in one order (like SQLite's BEGIN IMMEDIATE) and never deadlock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# HNSW build parameters: pgvector's defaults (m=16, ef_construction=64).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# The vectors are split by `seq` into this many HNSW graphs (partial indexes), searched together. One
# graph of a million vectors misses a fifth of the exact top 10 even at pgvector's largest ef_search;
# each of eight smaller graphs needs to find only its share of the top 10, which it does far more surely
# for the same work (bench/search_pg.py, bench/README.md).
HNSW_PARTITIONS = 8
# Upper bound on partitions, so dropping the vector index needs no catalogue lookup.
MAX_PARTITIONS = 64


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: Callable[[int], list[str]]  # given the embedding dimension


# The keyword index stems like SQLite's porter tokenizer and, like it, keeps every word: PostgreSQL's
# `english` configuration drops stopwords such as "before", which the memories' wording relies on.
TS_CONFIG = "octy_english"


def _core(dim: int) -> list[str]:
    return [
        "CREATE TEXT SEARCH DICTIONARY octy_english_stem (TEMPLATE = snowball, Language = english)",
        f"CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = english)",
        f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ALTER MAPPING FOR asciiword, asciihword, "
        "hword_asciipart, word, hword, hword_part WITH octy_english_stem",
        f"""CREATE TABLE IF NOT EXISTS nodes (
            seq BIGSERIAL UNIQUE,
            id TEXT PRIMARY KEY,
            node_type TEXT NOT NULL,
            subtype TEXT,
            content TEXT NOT NULL,
            salience DOUBLE PRECISION DEFAULT 1.0,
            confidence DOUBLE PRECISION DEFAULT 1.0,
            source TEXT DEFAULT 'user',
            created_at TEXT DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
            valid_from TEXT,
            valid_until TEXT,
            superseded_by TEXT,
            attributes TEXT DEFAULT '{{}}',
            can_summarize INTEGER DEFAULT 1,
            scope DOUBLE PRECISION DEFAULT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('{TS_CONFIG}', content)) STORED
        )""",
        """CREATE TABLE IF NOT EXISTS edges (
            seq BIGSERIAL UNIQUE,
            id TEXT PRIMARY KEY,
            source_id TEXT NOT NULL REFERENCES nodes(id),
            target_id TEXT NOT NULL REFERENCES nodes(id),
            edge_type TEXT NOT NULL,
            attributes TEXT DEFAULT '{}',
            created_at TEXT DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
        )""",
        f"""CREATE TABLE IF NOT EXISTS embeddings (
            seq BIGSERIAL UNIQUE,
            node_id TEXT PRIMARY KEY REFERENCES nodes(id),
            node_type TEXT NOT NULL,
            active BOOLEAN NOT NULL DEFAULT TRUE,
            vector vector({int(dim)}) NOT NULL,
            created_at TEXT DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
        )""",
        "CREATE TABLE IF NOT EXISTS octy_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS octy_state (one INTEGER PRIMARY KEY CHECK (one = 1), "
        "revision BIGINT NOT NULL DEFAULT 0)",
        "INSERT INTO octy_state(one, revision) VALUES (1, 0) ON CONFLICT DO NOTHING",
        "CREATE INDEX IF NOT EXISTS idx_nodes_type ON nodes(node_type)",
        "CREATE INDEX IF NOT EXISTS idx_nodes_subtype ON nodes(subtype)",
        "CREATE INDEX IF NOT EXISTS idx_edges_source ON edges(source_id)",
        "CREATE INDEX IF NOT EXISTS idx_edges_target ON edges(target_id)",
        "CREATE INDEX IF NOT EXISTS idx_edges_type ON edges(edge_type)",
        "CREATE INDEX IF NOT EXISTS idx_nodes_created ON nodes(created_at)",
        "CREATE INDEX IF NOT EXISTS idx_nodes_superseded_by ON nodes(superseded_by)",
        "CREATE INDEX IF NOT EXISTS idx_nodes_entity_name ON nodes(lower(content)) "
        "WHERE node_type = 'entity'",
        # One edge per (source, target, type): concurrent writers insert with ON CONFLICT DO NOTHING.
        "CREATE UNIQUE INDEX IF NOT EXISTS idx_edges_pair ON edges(source_id, target_id, edge_type)",
        "CREATE INDEX IF NOT EXISTS idx_nodes_tsv ON nodes USING gin(tsv)",
        "CREATE INDEX IF NOT EXISTS idx_embeddings_type ON embeddings(node_type)",
        # Schema 1 had one graph; migration 3 splits it.
        *vector_index_ddl(partitions=1),
    ]


def partition_predicate(partitions: int, part: int) -> str:
    """The rows of one vector partition; queries repeat it word for word so the planner picks its index."""
    return f"mod(seq, {int(partitions)}) = {int(part)}"


def vector_index_ddl(
    m: int = HNSW_M, ef_construction: int = HNSW_EF_CONSTRUCTION, partitions: int = HNSW_PARTITIONS
) -> list[str]:
    """CREATE INDEX statements of the vector index: one HNSW graph, or one per partition."""
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise ValueError(f"partitions must be 1..{MAX_PARTITIONS}")
    method = (
        "USING hnsw (vector vector_cosine_ops) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    )
    if partitions == 1:
        return [f"CREATE INDEX IF NOT EXISTS idx_embeddings_hnsw ON embeddings {method}"]
    return [
        f"CREATE INDEX IF NOT EXISTS idx_embeddings_hnsw_{k} ON embeddings {method} "
        f"WHERE {partition_predicate(partitions, k)}"
        for k in range(partitions)
    ]


def drop_vector_index_ddl() -> list[str]:
    """DROP statements for every shape the vector index can have."""
    return ["DROP INDEX IF EXISTS idx_embeddings_hnsw"] + [
        f"DROP INDEX IF EXISTS idx_embeddings_hnsw_{k}" for k in range(MAX_PARTITIONS)
    ]


def _partitioned_hnsw(dim: int) -> list[str]:
    """Split the one HNSW graph into HNSW_PARTITIONS graphs (rebuilds the index: minutes at 1M rows)."""
    return [
        *drop_vector_index_ddl(),
        *vector_index_ddl(),
        "INSERT INTO octy_meta(key, value) VALUES ('hnsw_partitions', "
        f"'{HNSW_PARTITIONS}') ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ]


def _keyword_stats(dim: int) -> list[str]:
    """BM25's figures kept as the data changes: document frequency per lexeme, length per document.

    Counting a common word's documents through the GIN index costs milliseconds per word at 100,000
    memories; a table kept by a trigger answers in one lookup. Writers already queue on octy_state, so
    the counters add no contention.
    """
    return [
        "CREATE FUNCTION octy_tokens(tsvector) RETURNS integer IMMUTABLE PARALLEL SAFE LANGUAGE sql "
        "AS 'SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer "
        "FROM unnest($1)'",
        f"ALTER TABLE nodes ADD COLUMN ntok integer GENERATED ALWAYS AS "
        f"(octy_tokens(to_tsvector('{TS_CONFIG}', content))) STORED",
        "CREATE TABLE octy_lexemes (lexeme TEXT PRIMARY KEY, df BIGINT NOT NULL)",
        # SET search_path FROM CURRENT: the trigger finds this project's table whoever writes.
        """CREATE FUNCTION octy_lexemes_track() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') THEN
                UPDATE octy_lexemes SET df = df - 1 WHERE lexeme = ANY(tsvector_to_array(OLD.tsv));
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                INSERT INTO octy_lexemes(lexeme, df)
                SELECT l, 1 FROM unnest(tsvector_to_array(NEW.tsv)) l
                ON CONFLICT (lexeme) DO UPDATE SET df = octy_lexemes.df + 1;
            END IF;
            RETURN NULL;
        END $$""",
        "CREATE TRIGGER nodes_lexemes AFTER INSERT OR DELETE OR UPDATE OF content ON nodes "
        "FOR EACH ROW EXECUTE FUNCTION octy_lexemes_track()",
        RECOUNT_LEXEMES,
    ]


RECOUNT_LEXEMES = (
    "INSERT INTO octy_lexemes(lexeme, df) SELECT l, count(*) FROM nodes, "
    "unnest(tsvector_to_array(tsv)) l GROUP BY l"
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "nodes, edges, embeddings, tsvector, hnsw", _core),
    Migration(2, "keyword statistics: lexeme document counts, document lengths", _keyword_stats),
    Migration(3, "vector index split into partitions by seq", _partitioned_hnsw),
)
SCHEMA_VERSION = MIGRATIONS[-1].version

MIGRATIONS_DDL = (
    "CREATE TABLE IF NOT EXISTS octy_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
    "applied_at TEXT NOT NULL)"
)
