import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { OBJECT_COLUMNS } from "./objectRows.js";

/**
 * SQL of the objects module. Every read is `FROM <table> FINAL` (the newest row of each key),
 * then the live condition (`deleted_at = 0`, `deleted = 0`).
 *
 * Version numbers. `version_index` is the 0-based rank of a version among all rows of its
 * object, deleted ones included, ordered by (created_at, digest); `is_latest` marks the last
 * live one. ClickHouse 18.16 has no window functions, so one aggregate per object collects
 * the ordered digests (`groupArray` of (created_at, digest) tuples, sorted) and the rank is
 * `indexOf` in that array; the rows are joined to their object's aggregate. Computing the rank
 * at read time is what makes concurrent creates safe: two processes creating different values
 * of one object at once each write their own row, and every reader ranks the same rows the same
 * way; an index assigned at insert would need the writers to agree on a counter (a read then a
 * write, racing). A deleted version keeps its row, so the ranks of the others never move; a
 * re-created one comes back with its first created_at, so it takes its old rank again.
 */

export interface VersionSelection {
  readonly projectId: string;
  readonly objectIds?: readonly string[] | null;
  readonly latestOnly?: boolean | null;
  /** Deleted versions too (a read names a deleted version as deleted rather than unknown). */
  readonly includeDeleted?: boolean;
  readonly isOp?: boolean | null;
  readonly baseClasses?: readonly string[] | null;
  readonly excludeBaseClasses?: readonly string[] | null;
  readonly leafClasses?: readonly string[] | null;
  /** Versions carrying any of these tags. */
  readonly tags?: readonly string[] | null;
  /** Versions any of these aliases names; `latest` names the latest version. */
  readonly aliases?: readonly string[] | null;
  readonly sortBy?: readonly { readonly field: "object_id" | "created_at"; readonly direction: "asc" | "desc" }[] | null;
  readonly limit?: number | null;
  readonly offset?: number | null;
}

const META_COLUMNS = "project_id, object_id, digest, kind, base_object_class, leaf_object_class, size_bytes, wb_user_id, created_at, deleted_at";

const nonEmpty = <T>(list: readonly T[] | null | undefined): list is readonly T[] => list !== null && list !== undefined && list.length > 0;

/** Conditions on the version rows themselves (before they are ranked). */
function rowConditions(s: VersionSelection, pb: ParamBuilder): string[] {
  const c = [`project_id = ${pb.str(s.projectId)}`];
  if (nonEmpty(s.objectIds)) c.push(`object_id IN ${pb.inStrings(s.objectIds)}`);
  if (!s.includeDeleted) c.push("deleted_at = 0");
  if (s.isOp === true) c.push("kind = 'op'");
  if (s.isOp === false) c.push("kind != 'op'");
  if (nonEmpty(s.baseClasses)) c.push(`base_object_class IN ${pb.inStrings(s.baseClasses)}`);
  if (nonEmpty(s.excludeBaseClasses)) c.push(`base_object_class NOT IN ${pb.inStrings(s.excludeBaseClasses)}`);
  if (nonEmpty(s.leafClasses)) c.push(`leaf_object_class IN ${pb.inStrings(s.leafClasses)}`);
  if (nonEmpty(s.tags)) c.push(`(object_id, digest) IN ${taggedVersions(s.projectId, s.tags, pb)}`);
  return c;
}

/** Conditions on the ranked versions. */
function rankConditions(s: VersionSelection, pb: ParamBuilder): string[] {
  const c: string[] = [];
  if (s.latestOnly) c.push("is_latest = 1");
  if (nonEmpty(s.aliases)) {
    const named = s.aliases.filter((a) => a !== "latest");
    const either: string[] = [];
    if (named.length > 0) either.push(`(object_id, digest) IN ${aliasTargets(s.projectId, named, pb)}`);
    if (named.length < s.aliases.length) either.push("is_latest = 1");
    c.push(`(${either.join(" OR ")})`);
  }
  return c;
}

function taggedVersions(projectId: string, tags: readonly string[], pb: ParamBuilder): string {
  return `(SELECT object_id, digest FROM object_tags FINAL WHERE project_id = ${pb.str(projectId)} AND deleted = 0 AND tag IN ${pb.inStrings(tags)})`;
}

function aliasTargets(projectId: string, aliases: readonly string[], pb: ParamBuilder): string {
  return `(SELECT object_id, digest FROM object_aliases FINAL WHERE project_id = ${pb.str(projectId)} AND deleted = 0 AND alias IN ${pb.inStrings(aliases)})`;
}

function orderBy(s: VersionSelection): string {
  const terms = (s.sortBy ?? []).map((t) => `${t.field === "object_id" ? "object_id" : "created_at"} ${t.direction === "desc" ? "DESC" : "ASC"}`);
  if (terms.length === 0) terms.push("created_at ASC");
  return [...terms, "version_index ASC", "object_id ASC"].join(", ");
}

/**
 * Version metadata (no values) with version_index and is_latest, filtered, sorted, paged.
 * `ALL INNER JOIN` against one row per object (`ANY` means one row per key on both sides on
 * current servers), with aliased subqueries (current servers require them): both forms run
 * the same on 18.16.
 */
export function versionsQuery(s: VersionSelection): BuiltQuery {
  const pb = new ParamBuilder();
  const rows = rowConditions(s, pb).join(" AND ");
  const objects = [`project_id = ${pb.str(s.projectId)}`, ...(nonEmpty(s.objectIds) ? [`object_id IN ${pb.inStrings(s.objectIds)}`] : [])].join(" AND ");
  const ranks = rankConditions(s, pb);
  return {
    sql: `SELECT ${META_COLUMNS},
  toInt32(indexOf(ordered, digest) - 1) AS version_index,
  toUInt8(digest = latest_digest) AS is_latest
FROM (SELECT ${META_COLUMNS} FROM objects FINAL WHERE ${rows}) AS versions
ALL INNER JOIN (
  SELECT object_id,
    arrayMap(v -> tupleElement(v, 2), arraySort(groupArray((created_at, digest)))) AS ordered,
    tupleElement(arraySort(groupArrayIf((created_at, digest), deleted_at = 0))[-1], 2) AS latest_digest
  FROM objects FINAL WHERE ${objects}
  GROUP BY object_id
) AS ranks USING object_id
${ranks.length > 0 ? `WHERE ${ranks.join(" AND ")}\n` : ""}ORDER BY ${orderBy(s)}
${pb.limitOffset(s.limit, s.offset)}`,
    params: pb.params,
  };
}

/** The stored values of some versions (any pair of the two lists; the caller keeps the pairs it asked). */
export function valuesQuery(projectId: string, objectIds: readonly string[], digests: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT object_id, digest, kind, deleted_at, val FROM objects FINAL
WHERE project_id = ${pb.str(projectId)} AND object_id IN ${pb.inStrings(objectIds)} AND digest IN ${pb.inStrings(digests)}`,
    params: pb.params,
  };
}

/** One version's row state, deleted or not (to create idempotently and to restore). */
export function versionStateQuery(projectId: string, objectId: string, digest: string): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT created_at, deleted_at, version FROM objects FINAL
WHERE project_id = ${pb.str(projectId)} AND object_id = ${pb.str(objectId)} AND digest = ${pb.str(digest)}`,
    params: pb.params,
  };
}

/** Deletes live versions: each row written again with `deleted_at` and a higher version. */
export function deleteVersionsQuery(projectId: string, objectId: string, digests: readonly string[], now: number): BuiltQuery {
  const pb = new ParamBuilder();
  const deletedAt = pb.int(now);
  const version = `greatest(version + 1, toUInt64(${pb.int(now)}))`;
  const values = OBJECT_COLUMNS.map((c) => (c === "deleted_at" ? deletedAt : c === "version" ? version : c));
  return {
    sql: `INSERT INTO objects (${OBJECT_COLUMNS.join(", ")})
SELECT ${values.join(", ")}
FROM objects FINAL
WHERE project_id = ${pb.str(projectId)} AND object_id = ${pb.str(objectId)} AND digest IN ${pb.inStrings(digests)} AND deleted_at = 0`,
    params: pb.params,
  };
}

/** Whether the project has any live object (then `latest` is one of its aliases). */
export function anyLiveObjectQuery(projectId: string): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT count() AS n FROM (SELECT 1 FROM objects FINAL WHERE project_id = ${pb.str(projectId)} AND deleted_at = 0 LIMIT 1)`,
    params: pb.params,
  };
}
