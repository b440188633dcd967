import { ParamBuilder, type BuiltQuery } from "../sql.js";

const MODEL_COLUMNS = "id, entity, project, name, base_model, run_id, created_at, deleted, version";
const CHECKPOINT_COLUMNS = "model_id, step, id, metrics, weights_digest, job_id, created_at, deleted, version";

const built = (pb: ParamBuilder, sql: string): BuiltQuery => ({ sql, params: pb.params });

/** A model's current state, deleted or not. */
export function modelByIdQuery(id: string): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT ${MODEL_COLUMNS} FROM training_models FINAL WHERE id = ${pb.str(id)}`);
}

/** The live model of a project with this name (the oldest, should two creations have raced). */
export function modelByNameQuery(entity: string, project: string, name: string): BuiltQuery {
  const pb = new ParamBuilder();
  return built(
    pb,
    `SELECT ${MODEL_COLUMNS} FROM training_models FINAL
     WHERE entity = ${pb.str(entity)} AND project = ${pb.str(project)} AND name = ${pb.str(name)} AND deleted = 0
     ORDER BY created_at, id LIMIT 1`,
  );
}

/** Live checkpoints of a model after (or before, descending) `fromStep`, one more than `limit`. */
export function checkpointsPageQuery(modelId: string, page: { fromStep: number | null; order: "asc" | "desc"; limit: number }): BuiltQuery {
  const pb = new ParamBuilder();
  const range = page.fromStep === null ? "" : ` AND step ${page.order === "asc" ? ">" : "<"} ${pb.count(page.fromStep)}`;
  return built(
    pb,
    `SELECT ${CHECKPOINT_COLUMNS} FROM training_checkpoints FINAL
     WHERE model_id = ${pb.str(modelId)} AND deleted = 0${range}
     ORDER BY step ${page.order === "asc" ? "ASC" : "DESC"} LIMIT ${pb.count(page.limit + 1)}`,
  );
}

/** Live checkpoints of a model with these steps (all live ones when `steps` is null). */
export function checkpointsAtQuery(modelId: string, steps: readonly number[] | null): BuiltQuery {
  const pb = new ParamBuilder();
  const filter = steps === null ? "" : ` AND toInt64(step) IN ${pb.inInts(steps)}`;
  return built(pb, `SELECT ${CHECKPOINT_COLUMNS} FROM training_checkpoints FINAL WHERE model_id = ${pb.str(modelId)} AND deleted = 0${filter} ORDER BY step`);
}

export function checkpointByIdQuery(modelId: string, id: string): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT ${CHECKPOINT_COLUMNS} FROM training_checkpoints FINAL WHERE model_id = ${pb.str(modelId)} AND id = ${pb.str(id)} AND deleted = 0 LIMIT 1`);
}

/** The checkpoint a job wrote, live or not (a job run again must not add a second one). */
export function checkpointOfJobQuery(modelId: string, jobId: string): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT ${CHECKPOINT_COLUMNS} FROM training_checkpoints FINAL WHERE model_id = ${pb.str(modelId)} AND job_id = ${pb.str(jobId)} LIMIT 1`);
}

/** The highest step a model ever had, deleted ones included (a new step never reuses one). */
export function maxStepQuery(modelId: string): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT max(step) AS step, count() AS n FROM training_checkpoints WHERE model_id = ${pb.str(modelId)}`);
}

export function trajectoryLogsQuery(modelId: string): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT split, groups, metrics FROM training_trajectory_logs WHERE model_id = ${pb.str(modelId)} ORDER BY created_at, id`);
}
