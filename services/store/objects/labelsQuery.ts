import { ParamBuilder, type BuiltQuery } from "../sql.js";

/**
 * SQL of tags (`object_tags`, one row per tag of a version) and aliases (`object_aliases`, one
 * row per alias of an object, naming a digest). Removal writes tombstones with INSERT … SELECT:
 * only for live rows, each with a version above the one it replaces (and at least the writer's
 * clock), so FINAL prefers the tombstone whatever the clocks of the processes that wrote.
 */

export type LabelTable = "object_tags" | "object_aliases";

/** The current version of some labels of one object (live or removed), to outrank them. */
export function labelVersionsQuery(table: LabelTable, projectId: string, objectId: string, names: readonly string[], digest?: string): BuiltQuery {
  const pb = new ParamBuilder();
  const name = table === "object_tags" ? "tag" : "alias";
  const onDigest = digest === undefined ? "" : ` AND digest = ${pb.str(digest)}`;
  return {
    sql: `SELECT ${name} AS name, version FROM ${table} FINAL
WHERE project_id = ${pb.str(projectId)} AND object_id = ${pb.str(objectId)}${onDigest} AND ${name} IN ${pb.inStrings(names)}`,
    params: pb.params,
  };
}

export interface LabelRemoval {
  readonly projectId: string;
  readonly objectId: string;
  /** Only these names (tags or aliases); all when absent. */
  readonly names?: readonly string[];
  /** Only labels on these digests; all when absent. */
  readonly digests?: readonly string[];
}

/** Tombstones for the live labels a removal names. */
export function removeLabelsQuery(table: LabelTable, removal: LabelRemoval, now: number): BuiltQuery {
  const pb = new ParamBuilder();
  const name = table === "object_tags" ? "tag" : "alias";
  const conditions = [`project_id = ${pb.str(removal.projectId)}`, `object_id = ${pb.str(removal.objectId)}`, "deleted = 0"];
  if (removal.names) conditions.push(`${name} IN ${pb.inStrings(removal.names)}`);
  if (removal.digests) conditions.push(`digest IN ${pb.inStrings(removal.digests)}`);
  const columns = table === "object_tags" ? "project_id, object_id, digest, tag" : "project_id, object_id, alias, digest";
  return {
    sql: `INSERT INTO ${table} (${columns}, deleted, created_at, version)
SELECT ${columns}, 1, created_at, greatest(version + 1, toUInt64(${pb.int(now)}))
FROM ${table} FINAL
WHERE ${conditions.join(" AND ")}`,
    params: pb.params,
  };
}

/** The live tags and aliases of some objects' versions: rows {kind, object_id, digest, name}. */
export function labelsOfObjectsQuery(projectId: string, objectIds: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const ids = pb.inStrings(objectIds);
  return {
    sql: `SELECT 'tag' AS kind, object_id, digest, tag AS name FROM object_tags FINAL
WHERE project_id = ${project} AND object_id IN ${ids} AND deleted = 0
UNION ALL
SELECT 'alias' AS kind, object_id, digest, alias AS name FROM object_aliases FINAL
WHERE project_id = ${project} AND object_id IN ${ids} AND deleted = 0`,
    params: pb.params,
  };
}

/** Every live tag (or alias) name of a project, once each. */
export function labelNamesQuery(table: LabelTable, projectId: string): BuiltQuery {
  const pb = new ParamBuilder();
  const name = table === "object_tags" ? "tag" : "alias";
  return {
    sql: `SELECT DISTINCT ${name} AS name FROM ${table} FINAL WHERE project_id = ${pb.str(projectId)} AND deleted = 0`,
    params: pb.params,
  };
}
