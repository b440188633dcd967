import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { fromModelRow, type ModelReadRow, type ModelRecord } from "./trainingRows.js";

/** The most trained models `GET /v1/models` lists for one key. */
export const MAX_LISTED_MODELS = 1000;

/**
 * Live trained models of some entities (null: every entity), newest first, at most `limit`.
 * For the inference model list (services/inference/trainedModels.ts).
 */
export function liveModelsQuery(entities: readonly string[] | null, limit: number): BuiltQuery {
  const pb = new ParamBuilder();
  const ofEntities = entities === null ? "" : ` AND entity IN (${entities.length === 0 ? "''" : entities.map((e) => pb.str(e)).join(", ")})`;
  const sql = `SELECT id, entity, project, name, base_model, run_id, created_at, deleted, version FROM training_models FINAL
     WHERE deleted = 0${ofEntities}
     ORDER BY created_at DESC, id LIMIT ${pb.count(limit)}`;
  return { sql, params: pb.params };
}

export async function liveModels(store: ClickHouseStore, entities: readonly string[] | null, limit = MAX_LISTED_MODELS): Promise<ModelRecord[]> {
  const rows = await store.rows<ModelReadRow>("training_models_live", liveModelsQuery(entities, limit));
  return rows.map(fromModelRow);
}
