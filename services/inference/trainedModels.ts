import { entitiesWith, type Principal } from "../auth/keys.js";
import { ForbiddenError } from "../errors.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { liveModels } from "../store/training/trainedModelList.js";
import type { TrainedModels } from "../training/trainedModels.js";
import type { ModelLister, ModelResolver } from "./models.js";

/**
 * Trained models as chat completions and the model list see them: ART's names,
 * `wandb-artifact:///<entity>/<project>/<name>` (latest step) or `…:step<N>`, resolved by the
 * training service's lookup; a project the key does not reach answers 403.
 */
const trainedName = (entity: string, project: string, name: string) => `wandb-artifact:///${entity}/${project}/${name}`;

export function trainedModelResolver(trained: TrainedModels): ModelResolver {
  return async (name, reach) => {
    const found = await trained.weightsFor(name, (projectId) => {
      if (!reach(projectId)) throw new ForbiddenError(`this key may not reach project ${projectId}`);
    });
    if (!found) return null;
    // The answer names the step sampled, as OpenAI answers a model's dated snapshot.
    return { modelId: `${name.replace(/:step\d+$/, "")}:step${found.step}`, cacheKey: `${found.modelId}:${found.step}`, weights: found.weights };
  };
}

/** The live trained models of the entities the key reaches (every entity for a `*` key), newest first. */
export function trainedModelLister(store: ClickHouseStore): ModelLister {
  return async (principal: Principal) => {
    const entities = entitiesWith(principal);
    const models = await liveModels(store, entities);
    return models.map((m) => {
      const id = trainedName(m.entity, m.project, m.name);
      return { id, object: "model" as const, created: Math.floor(m.createdAt / 1_000_000), owned_by: m.entity, root: m.baseModel };
    });
  };
}
