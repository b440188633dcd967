import { ParamBuilder, type BuiltQuery } from "../sql.js";
import type { StoredFile } from "./fileRows.js";
import { CHUNKS_TABLE, FILES_TABLE } from "./schema.js";

/** Every upload recorded under a digest, the one served first (highest version, then upload id). */
export function fileUploadsQuery(projectId: string, digest: string): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT upload_id, size_bytes, chunk_count FROM ${FILES_TABLE}
    WHERE project_id = ${pb.str(projectId)} AND digest = ${pb.str(digest)}
    ORDER BY version DESC, upload_id DESC`;
  return { sql, params: pb.params };
}

/** The bytes of the project's distinct files (uploads of the same content count once). */
export function totalSizeQuery(projectId: string): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT sum(size) AS total_size_bytes FROM (
      SELECT any(size_bytes) AS size FROM ${FILES_TABLE} WHERE project_id = ${pb.str(projectId)} GROUP BY digest
    )`;
  return { sql, params: pb.params };
}

/** Chunks `from .. to-1` of a recorded file, in order. */
export function chunkRangeQuery(file: StoredFile, from: number, to: number): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT data FROM ${CHUNKS_TABLE}
    WHERE project_id = ${pb.str(file.projectId)} AND upload_id = ${pb.str(file.uploadId)}
      AND chunk_index >= ${pb.count(from)} AND chunk_index < ${pb.count(to)} AND deleted = 0
    ORDER BY chunk_index`;
  return { sql, params: pb.params };
}
