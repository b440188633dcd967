import type { Principal } from "../auth/keys.js";
import type { ModelEntry } from "../contract/chat.js";
import { baseModels } from "../lm/baseModelCatalog.js";
import type { ModelWeightsRef } from "../lm/modelCache.js";

/**
 * Which weights a model name stands for, and which models a key may list. A chat request
 * asks each resolver in turn; the first that knows the name answers. The base models are
 * resolved here; trained models (`wandb-artifact:///…`) by the training service's lookup,
 * given to the routes by the wiring (resources.ts).
 */

/** Whether the request's key reaches a project (`entity/project`). */
export type Reach = (projectId: string) => boolean;

export interface ResolvedModel {
  /** The concrete model (a trained model's step), answered as `model` and keyed in usage. */
  readonly modelId: string;
  /** What names these weights in the loaded-model cache, when `modelId` may not (a model deleted and made again under its name). */
  readonly cacheKey?: string;
  readonly weights: Uint8Array;
}

export type ModelResolver = (name: string, reach: Reach) => Promise<ResolvedModel | null>;

/** The models a key may use, as `GET /v1/models` lists them. */
export type ModelLister = (principal: Principal) => Promise<ModelEntry[]>;

export const OWNER = "tracehouse";

/** The shipped base models, their weights from `baseWeights` (lm/modelThreads.ts: read once per id). */
export const baseModelResolver = (baseWeights: (id: string) => Promise<Uint8Array | null>): ModelResolver => async (name) => {
  const found = await baseWeights(name);
  return found ? { modelId: name, weights: found } : null;
};

export const baseModelLister: ModelLister = async () =>
  baseModels().map((m) => ({ id: m.id, object: "model" as const, created: m.created, owned_by: OWNER, root: m.id }));

/** What names the resolved weights among the loaded models of a model thread. */
export const weightsRefOf = (resolved: ResolvedModel): ModelWeightsRef => ({ key: resolved.cacheKey ?? resolved.modelId, weights: resolved.weights });

export async function resolveModel(resolvers: readonly ModelResolver[], name: string, reach: Reach): Promise<ResolvedModel | null> {
  for (const resolve of resolvers) {
    const found = await resolve(name, reach);
    if (found) return found;
  }
  return null;
}
