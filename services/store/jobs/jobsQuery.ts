import { ParamBuilder, type BuiltQuery } from "../sql.js";

const JOB_COLUMNS =
  "id, type, serial_key, input, submitted_at, status, attempt, not_before, claim_id, runner_id, claimed_at, output, error, finished_at, version";

/** The current state of one job. */
export function jobByIdQuery(id: string): BuiltQuery {
  const pb = new ParamBuilder();
  return { sql: `SELECT ${JOB_COLUMNS} FROM jobs FINAL WHERE id = ${pb.str(id)}`, params: pb.params };
}

/**
 * The job each serial key runs next: per key, its earliest unfinished job (by submission
 * time, then id). FINAL collapses each job to its current state before WHERE, so a job that
 * finished never shows through an older `queued` row. The input is left out (it can be
 * large): the runner reads it with the job's full row when it claims.
 */
export function nextPerSerialKeyQuery(types: readonly string[], limit: number): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT * FROM (
      SELECT id, type, serial_key, '{}' AS input, submitted_at, status, attempt, not_before, claim_id, runner_id, claimed_at,
             '' AS output, error, finished_at, version
      FROM jobs FINAL
      WHERE status IN ('queued', 'running')
      ORDER BY serial_key, submitted_at, id
      LIMIT 1 BY serial_key
    )
    WHERE type IN ${pb.inStrings(types)}
    ORDER BY submitted_at, id
    LIMIT ${pb.count(limit)}`;
  return { sql, params: pb.params };
}

/** The last sign of life (µs) of a runner on each of `jobIds` that has one. */
export function lastBeatsQuery(jobIds: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT job_id, max(beat_at) AS beat_at FROM job_heartbeats WHERE job_id IN ${pb.inStrings(jobIds)} GROUP BY job_id`,
    params: pb.params,
  };
}

export function lastEventQuery(jobId: string): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT job_id, seq, id, type, data, at FROM job_events FINAL WHERE job_id = ${pb.str(jobId)} ORDER BY seq DESC LIMIT 1`,
    params: pb.params,
  };
}

export function eventSeqQuery(jobId: string, eventId: string): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT seq FROM job_events FINAL WHERE job_id = ${pb.str(jobId)} AND id = ${pb.str(eventId)} LIMIT 1`,
    params: pb.params,
  };
}

/** Events after `afterSeq` in order; one more than `limit` to tell whether more follow. */
export function eventsPageQuery(jobId: string, afterSeq: number, limit: number): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT job_id, seq, id, type, data, at FROM job_events FINAL
          WHERE job_id = ${pb.str(jobId)} AND seq > ${pb.int(afterSeq)}
          ORDER BY seq LIMIT ${pb.count(limit + 1)}`,
    params: pb.params,
  };
}

/** The earliest submission time (µs) of the jobs of `types`, 0 when there is none. */
export function oldestSubmittedQuery(types: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  return { sql: `SELECT min(submitted_at) AS oldest FROM jobs WHERE type IN ${pb.inStrings(types)}`, params: pb.params };
}

/** Every row (every state) of the jobs of `types` submitted before `beforeMicros`: a mutation. */
export function deleteSubmittedBeforeQuery(table: string, types: readonly string[], beforeMicros: number): BuiltQuery {
  const pb = new ParamBuilder();
  return { sql: `ALTER TABLE ${table} DELETE WHERE type IN ${pb.inStrings(types)} AND submitted_at < ${pb.int(beforeMicros)}`, params: pb.params };
}
