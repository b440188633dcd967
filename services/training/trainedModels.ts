import type { ClickHouseStore } from "../store/clickhouse.js";
import { TrainingRepository } from "../store/training/trainingRepository.js";
import { projectIdOf } from "../store/training/trainingRows.js";
import { WeightsStore } from "../store/training/weightsStore.js";

/** `wandb-artifact:///<entity>/<project>/<name>` (latest step) or `…:step<N>`, as ART names trained models. */
const TRAINED_MODEL = /^wandb-artifact:\/\/\/([^/]+)\/([^/]+)\/([^/:]+)(?::step(\d{1,9}))?$/;

export interface TrainedWeights {
  readonly modelId: string;
  readonly step: number;
  readonly weights: Uint8Array;
}

/** Weights cached (by project and digest), at most this many. */
const CACHE_ENTRIES = 4;

/** Parses a trained model's name; null when it is not one. */
export function parseTrainedModelName(name: string): { entity: string; project: string; model: string; step: number | null } | null {
  const match = TRAINED_MODEL.exec(name);
  if (!match) return null;
  return { entity: match[1]!, project: match[2]!, model: match[3]!, step: match[4] === undefined ? null : Number(match[4]) };
}

/**
 * The weights chat completions sample a trained model with. `reach` checks that the
 * request's key reaches a project (it throws, 403, when not), and is called before anything
 * of the project is read. Unknown model, deleted model or missing step → null.
 */
export class TrainedModels {
  private readonly repo: TrainingRepository;
  private readonly weights: WeightsStore;
  /** Least recently used first (a Map keeps insertion order). */
  private readonly cache = new Map<string, Uint8Array>();

  constructor(store: ClickHouseStore) {
    this.repo = new TrainingRepository(store);
    this.weights = new WeightsStore(store);
  }

  async weightsFor(name: string, reach: (projectId: string) => void): Promise<TrainedWeights | null> {
    const parsed = parseTrainedModelName(name);
    if (!parsed) return null;
    reach(`${parsed.entity}/${parsed.project}`);
    const model = await this.repo.modelByName(parsed.entity, parsed.project, parsed.model);
    if (!model) return null;
    const checkpoint = parsed.step === null ? await this.repo.latestCheckpoint(model.id) : await this.repo.checkpointAt(model.id, parsed.step);
    if (!checkpoint) return null;
    const weights = await this.cachedWeights(projectIdOf(model), checkpoint.weightsDigest);
    return weights && { modelId: model.id, step: checkpoint.step, weights };
  }

  private async cachedWeights(projectId: string, digest: string): Promise<Uint8Array | null> {
    const key = `${projectId}\n${digest}`;
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const weights = await this.weights.get(projectId, digest);
    if (!weights) return null;
    this.cache.set(key, weights);
    while (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    return weights;
  }
}
