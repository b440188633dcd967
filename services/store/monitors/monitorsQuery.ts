import { ParamBuilder, type BuiltQuery } from "../sql.js";

/** The leaf class of the objects the Weave SDK publishes as monitors (`weave.flow.monitor.Monitor`). */
export const MONITOR_CLASS = "Monitor";

/**
 * The latest live version of every monitor (of one project and name when given), with its
 * value. Plan: the keys of objects that ever had a Monitor version (a plain scan of one
 * column, no FINAL), then, for those objects only, FINAL collapses each version's row and the
 * newest live one by (created_at, digest) is picked as objectsQuery.ts ranks versions, the
 * value carried along in the tuple. The caller keeps the rows whose latest version is still a
 * Monitor (an object whose newest version has another class is no monitor any more).
 */
export function latestMonitorsQuery(only: { readonly projectId: string; readonly name: string } | null): BuiltQuery {
  const pb = new ParamBuilder();
  const scope = only ? [`project_id = ${pb.str(only.projectId)}`, `object_id = ${pb.str(only.name)}`] : [];
  const keys = [`leaf_object_class = ${pb.str(MONITOR_CLASS)}`, ...scope].join(" AND ");
  const live = ["deleted_at = 0", ...scope, `(project_id, object_id) IN (SELECT project_id, object_id FROM objects WHERE ${keys})`].join(" AND ");
  return {
    sql: `SELECT project_id, object_id,
  tupleElement(latest, 1) AS created_at, tupleElement(latest, 2) AS digest, tupleElement(latest, 3) AS leaf_object_class, tupleElement(latest, 4) AS val, tupleElement(latest, 5) AS wb_user_id
FROM (
  SELECT project_id, object_id, arraySort(groupArray((created_at, digest, leaf_object_class, val, wb_user_id)))[-1] AS latest
  FROM objects FINAL
  WHERE ${live}
  GROUP BY project_id, object_id
)
ORDER BY project_id, object_id`,
    params: pb.params,
  };
}
