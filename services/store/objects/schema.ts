import type { Migration } from "../migrations.js";

/**
 * Tables of the objects module (spec: "Objects, refs, digests").
 *
 * `objects` holds one row per version of an object: key (project_id, object_id, digest), so
 * the same value created twice is one row. Every change writes a whole new row with a higher
 * `version` (ReplacingMergeTree) and every read uses FINAL:
 * - creating a new value writes a row with `deleted_at = 0`;
 * - deleting a version writes its row again with `deleted_at` set (µs), so its digest stays
 *   known (and keeps its place in the version numbering);
 * - creating a deleted value again writes the row once more with `deleted_at = 0` and its
 *   first `created_at`: the version comes back where it was.
 * `version_index` and `is_latest` are not stored: they are computed at read time from the
 * (created_at, digest) order of all rows of the object (see objectsQuery.ts), so concurrent
 * creates from several processes never have to agree on a counter.
 *
 * - `val`: the value's JSON text as written by `stringifyLossless` (key order as sent, floats
 *   with a fraction, integers exact), answered verbatim by reads.
 * - `size_bytes`: length of the value's canonical text (`json.dumps(val, sort_keys=True)`, ASCII).
 * - `kind`: `op` or `object`; `base_object_class`/`leaf_object_class`: '' when none.
 *
 * `object_tags` (a tag on one version) and `object_aliases` (an alias of an object naming one
 * version; key without the digest, so setting it again moves it) are small tables of the same
 * kind: removal writes a tombstone (`deleted = 1`) with a higher version.
 */
export const OBJECTS_MIGRATION: Migration = {
  version: 10,
  name: "objects",
  statements: [
    `CREATE TABLE IF NOT EXISTS objects (
      project_id String,
      object_id String,
      digest String,
      kind String,
      base_object_class String,
      leaf_object_class String,
      val String,
      size_bytes UInt64,
      wb_user_id String,
      created_at Int64,
      deleted_at Int64,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, object_id, digest)`,
    `CREATE TABLE IF NOT EXISTS object_tags (
      project_id String,
      object_id String,
      digest String,
      tag String,
      deleted UInt8,
      created_at Int64,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, object_id, digest, tag)`,
    `CREATE TABLE IF NOT EXISTS object_aliases (
      project_id String,
      object_id String,
      alias String,
      digest String,
      deleted UInt8,
      created_at Int64,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, object_id, alias)`,
  ],
};
