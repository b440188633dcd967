import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { HttpApi } from "../http/app.js";
import type { TraceEvent } from "../queue/events.js";
import type { EventPublisher } from "../queue/queue.js";
import { Catalogs, mountCatalogRoutes } from "./catalogs.js";
import { mountChatCompletions } from "./chatCompletionsRoutes.js";
import type { ModelThreads } from "../lm/modelThreads.js";
import { OWNER, type ModelLister, type ModelResolver } from "./models.js";
import { mountModelsList } from "./modelsRoutes.js";
import { CompletionRecorder } from "./recording.js";
import { Upstream } from "./upstream.js";

export interface InferenceParts {
  readonly config: Config;
  readonly log: Logger;
  /** The calls queue, where completions are recorded; null: not recorded. */
  readonly publisher: EventPublisher<TraceEvent> | null;
  /** Base models first, then trained models (the wiring adds the training service's lookup). */
  readonly resolvers: readonly ModelResolver[];
  readonly listers: readonly ModelLister[];
  /** The process's model threads (the wiring makes them, shares them with evaluation and training jobs and stops them). */
  readonly modelThreads: ModelThreads;
}

function upstreamOf(config: Config): Upstream | null {
  if (!config.INFERENCE_UPSTREAM_URL) return null;
  return new Upstream({ url: config.INFERENCE_UPSTREAM_URL, key: config.INFERENCE_UPSTREAM_KEY ?? null, models: config.INFERENCE_UPSTREAM_MODELS });
}

/** The inference role: chat completions and the model list. Models routed upstream are listed too. */
export function mountInference(api: HttpApi, parts: InferenceParts): void {
  const upstream = upstreamOf(parts.config);
  mountChatCompletions(api, {
    resolvers: parts.resolvers,
    modelThreads: parts.modelThreads,
    recorder: parts.publisher ? new CompletionRecorder(parts.publisher, parts.log) : null,
    upstream,
    maxTokens: parts.config.CHAT_MAX_TOKENS,
    log: parts.log,
  });
  const upstreamLister: ModelLister = async () =>
    (upstream?.listedModels() ?? []).map((id) => ({ id, object: "model" as const, created: 0, owned_by: `${OWNER}-upstream`, root: id }));
  mountModelsList(api, [...parts.listers, upstreamLister]);
}

/** The inference information catalogs (tracing API side, any key). */
export function mountInferenceCatalogs(api: HttpApi, config: Config, log: Logger): void {
  const catalogs = new Catalogs({ urls: config.INFERENCE_CATALOG_URLS, refreshMs: config.INFERENCE_CATALOG_REFRESH_MS }, log);
  catalogs.start();
  api.onStop(() => catalogs.stop());
  mountCatalogRoutes(api, catalogs);
}
