import type { Migration } from "../migrations.js";

export const CHUNKS_TABLE = "file_chunks";
export const FILES_TABLE = "files";

/**
 * Tables of the files module (files and images).
 *
 * A file's digest is known only once its last byte has arrived, so an upload writes its
 * content first, in chunks keyed by a fresh `upload_id`, and then records the file under
 * its digest in `files`. Content is reachable only through a `files` row, written after
 * every chunk of that upload was stored: a half-written upload is never served.
 *
 * `file_chunks`: one row per chunk (1 MiB, the last one shorter). An upload that fails (too
 * large, not an image, the client went away) or that turns out to duplicate a file already
 * stored writes a tombstone per chunk: the same key with `deleted = 1` and empty `data`;
 * `deleted` is also the ReplacingMergeTree version, so merges replace the content by the
 * tombstone and the space comes back. The chunks of a recorded file never get tombstones,
 * so reads need no FINAL. `index_granularity = 8`: a file is read 8 chunks per query and
 * each query reads only the granule it needs, while the primary index keeps one entry per 8
 * chunks, however many small files there are.
 *
 * `files`: one row per upload recorded under a digest. Two uploads of the same content may
 * race past the "already stored?" check and both be recorded; the one served is always the
 * row with the highest (`version`, `upload_id`), `version` being random, and the others'
 * chunks are tombstoned. `created_at`: µs since the epoch.
 */
export const FILES_MIGRATION: Migration = {
  version: 14,
  name: "files",
  statements: [
    `CREATE TABLE IF NOT EXISTS ${CHUNKS_TABLE} (
      project_id String,
      upload_id String,
      chunk_index UInt64,
      deleted UInt8,
      data String
    ) ENGINE = ReplacingMergeTree(deleted)
    ORDER BY (project_id, upload_id, chunk_index)
    SETTINGS index_granularity = 8`,
    `CREATE TABLE IF NOT EXISTS ${FILES_TABLE} (
      project_id String,
      digest String,
      upload_id String,
      size_bytes UInt64,
      chunk_count UInt64,
      created_at Int64,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, digest)`,
  ],
};
