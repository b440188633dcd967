import type { Logger } from "pino";
import type { Config, RoleName } from "./config.js";
import type { HttpApi } from "./http/app.js";
import type { KeyRing } from "./auth/keys.js";
import { mountAdminKeyRoutes } from "./query/adminKeysRoutes.js";
import { KEYS_MIGRATION } from "./store/keys/schema.js";
import { mountCallIngest } from "./ingest/callsRoutes.js";
import { mountOtlpIngest } from "./ingest/otlp/routes.js";
import { otlpLimits } from "./ingest/otlp/export.js";
import { mountCallQueries, type CallsQueryDeps } from "./query/callsRoutes.js";
import { costsEnricher, mountCostRoutes } from "./query/costsRoutes.js";
import { feedbackEnricher, mountFeedbackRoutes } from "./query/feedbackRoutes.js";
import { mountGraphqlRoutes } from "./query/graphqlRoutes.js";
import { mountObjectRoutes } from "./query/objectsRoutes.js";
import { mountAnnotationQueueRoutes } from "./query/annotationQueuesRoutes.js";
import { ANNOTATION_MIGRATIONS } from "./store/annotationQueues/schema.js";
import { mountFileRoutes, type ObjectWriter } from "./query/filesRoutes.js";
import { ObjectsRepository } from "./store/objects/objectsRepository.js";
import { mountTableRoutes } from "./query/tablesRoutes.js";
import { mountRefRoutes, storeSources } from "./query/refsRoutes.js";
import { RefExpander } from "./query/expandRefs.js";
import { RefResolver } from "./query/refValues.js";
import { mountThreadQueries } from "./query/threadsRoutes.js";
import { mountUsageRoutes } from "./query/usageRoutes.js";
import { mountV2Routes } from "./query/v2Routes.js";
import { mountInference, mountInferenceCatalogs } from "./inference/inferenceRoutes.js";
import { baseModelLister, baseModelResolver, type ModelResolver } from "./inference/models.js";
import { baseModels } from "./lm/baseModelCatalog.js";
import type { ModelThreads } from "./lm/modelThreads.js";
import { trainedModelLister, trainedModelResolver } from "./inference/trainedModels.js";
import { TrainedModels } from "./training/trainedModels.js";
import { mountProjectRoutes } from "./query/projectsRoutes.js";
import { mountUiRoutes } from "./query/uiRoutes.js";
import { mountMcpRoutes } from "./mcp/routes.js";
import type { McpReads } from "./mcp/context.js";
import { CostsRepository } from "./store/costs/costsRepository.js";
import { ProjectsRepository } from "./store/projects/projectsRepository.js";
import { ThreadsReadRepository } from "./store/threads/threadsRead.js";
import { StatsRepository } from "./store/usage/statsRead.js";
import { UsageRepository } from "./store/usage/usageRead.js";
import { callBatchHandler } from "./worker/callWorker.js";
import type { TraceEvent } from "./queue/events.js";
import type { EventPublisher } from "./queue/queue.js";
import { CALLS_LONG_LEAVES_MIGRATION, CALLS_MIGRATION, CALLS_PATHS_ONCE_MIGRATION, SPAN_RESOURCES_MIGRATION } from "./store/calls/schema.js";
import { CallsReadRepository } from "./store/calls/callsRead.js";
import type { ClickHouseStore } from "./store/clickhouse.js";
import { COSTS_MIGRATION } from "./store/costs/schema.js";
import { FEEDBACK_MIGRATION } from "./store/feedback/schema.js";
import { JOBS_MIGRATION } from "./store/jobs/schema.js";
import { FILES_MIGRATION } from "./store/files/schema.js";
import type { Migration } from "./store/migrations.js";
import { CALL_REF_BOUNDS_BY_WORKER_MIGRATION, CALL_REF_BOUNDS_MIGRATION, CALL_REF_BOUNDS_VIEW_MIGRATION, PROJECT_SETTINGS_MIGRATION, PROJECTS_MIGRATION } from "./store/projects/schema.js";
import type { ProjectRetention } from "./store/projects/retention.js";
import { OBJECTS_MIGRATION } from "./store/objects/schema.js";
import { TABLE_SORT_KEYS_MIGRATION, TABLES_MIGRATION } from "./store/tables/schema.js";
import { THREADS_MIGRATION } from "./store/threads/schema.js";
import { RETRIES_MIGRATION } from "./store/retries/schema.js";
import { OTEL_LOGS_MIGRATION } from "./store/otelLogs/schema.js";
import { OtelLogsRepository } from "./store/otelLogs/otelLogsRepository.js";
import { mountOtelLogsRoutes } from "./query/otelLogsRoutes.js";
import { TRAINING_MIGRATION } from "./store/training/schema.js";
import { mountTrainingHealthRoutes } from "./training/healthRoutes.js";
import { mountTrainingRoutes } from "./training/trainingRoutes.js";
import { mountTrainerRoutes } from "./training/trainerRoutes.js";
import { TRAINER_MESSAGES_MIGRATION } from "./store/training/trainerMessages.js";
import { trainerRelayJobs } from "./worker/jobs/trainerRelay.js";
import type { JobHandler } from "./worker/jobs/handler.js";
import type { JobSubmitter } from "./worker/jobs/submitter.js";
import { trainerJobs } from "./worker/jobs/trainerJob.js";
import { mountEvaluationRoutes } from "./query/evaluationsRoutes.js";
import { localChatCompleter } from "./inference/evalCompleter.js";
import { UpstreamChatCompleter, type ChatCompleter } from "./worker/jobs/chatCompleter.js";
import { evaluationJobs } from "./worker/jobs/evaluationJobs.js";
import { mountAlertRoutes } from "./query/alertsRoutes.js";
import { ALERTS_MIGRATION } from "./store/alerts/schema.js";
import { AlertsRepository } from "./store/alerts/alertsRepository.js";
import { AlertMetrics } from "./store/alerts/alertMetrics.js";
import { JobsRepository } from "./store/jobs/jobsRepository.js";
import { AlertEvaluator } from "./worker/alerts/alertEvaluator.js";
import { WebhookTargets } from "./worker/alerts/webhookTarget.js";
import { alertWebhookJobs } from "./worker/jobs/alertWebhook.js";
import { mountMonitorRoutes } from "./query/monitorsRoutes.js";
import { Monitors } from "./worker/monitors/monitors.js";

/** The roles that mount HTTP routes: every role but the worker. */
export type HttpRole = Exclude<RoleName, "worker">;

/** What a resource's parts are made from; each part takes only what it needs. */
export interface ServiceParts {
  readonly config: Config;
  readonly log: Logger;
  readonly store: ClickHouseStore;
  /** Set in processes that run ingest. */
  readonly publisher: EventPublisher<TraceEvent> | null;
  /** Set in processes that can submit jobs (query role, with Kafka or the worker role beside it). */
  readonly jobSubmitter: JobSubmitter | null;
  /** The jobs topic accepts jobs and, in a worker process, the job runner runs. */
  readonly jobsHealthy: () => Promise<boolean>;
  /** The keys this process accepts; the keys resource changes it when a key is made or revoked. */
  readonly keys: KeyRing;
  /** The process's model threads (lm/modelThreads.ts): chat completions, evaluation jobs and training share them (service.ts stops them). */
  readonly modelThreads: ModelThreads;
  /** Each project's retention: every read of calls, and of what derives from them, leaves out what is past it. */
  readonly retention: ProjectRetention;
  /** A project's settings changed in this process: the worker's retention job, if it runs here, runs soon. */
  readonly retentionChanged: () => void;
}

export interface Resource {
  readonly name: string;
  /** Versions are unique across all resources. */
  readonly migrations?: readonly Migration[];
  readonly routes?: Partial<Record<HttpRole, (api: HttpApi, parts: ServiceParts) => void>>;
  /** Job types this resource runs on the job runner (worker role), by type. */
  readonly jobHandlers?: (parts: ServiceParts) => Readonly<Record<string, JobHandler>>;
  /** Periodic work of the worker role (one per machine's processes: PROCESS_INDEX 0), started after the job runner and stopped before it. */
  readonly workerTasks?: (parts: ServiceParts) => readonly WorkerTask[];
}

/** A periodic task of the worker role: `start` returns at once; `stop` resolves once the run under way ended. */
export interface WorkerTask {
  start(): void;
  stop(): Promise<void>;
}

/** Images uploaded through /image/create are also saved as objects, so that their refs resolve. */
const objectWriter = (store: ClickHouseStore): ObjectWriter => {
  const objects = new ObjectsRepository(store);
  return (projectId, objectId, val, wbUserId) => objects.createValue(projectId, objectId, val, wbUserId);
};

/** Base models, then trained models (`wandb-artifact:///…`) through the training service's lookup. */
const modelResolvers = (store: ClickHouseStore, modelThreads: ModelThreads): ModelResolver[] => [
  baseModelResolver((id) => modelThreads.baseWeights(id)),
  trainedModelResolver(new TrainedModels(store)),
];

/** The LLM endpoint of evaluation and scoring jobs: EVAL_LLM_BASE_URL, else the built-in and trained models in process. */
const evalCompleter = ({ config, store, modelThreads }: ServiceParts): ChatCompleter =>
  config.EVAL_LLM_BASE_URL
    ? new UpstreamChatCompleter(config.EVAL_LLM_BASE_URL, config.EVAL_LLM_API_KEY ?? null)
    : localChatCompleter({ resolvers: modelResolvers(store, modelThreads), modelThreads, maxTokens: config.CHAT_MAX_TOKENS });

/** How calls are read (the calls routes and the MCP tools): GenAI events, costs, feedback, expanded refs. */
const callQueries = (store: ClickHouseStore, retention: ProjectRetention): CallsQueryDeps => ({
  reads: new CallsReadRepository(store, retention),
  logs: new OtelLogsRepository(store),
  enrichers: { include_costs: costsEnricher(store), include_feedback: feedbackEnricher(store) },
  expander: new RefExpander(new CallsReadRepository(store, retention), new RefResolver(storeSources(store, retention))),
});

/** What the MCP tools read through: the repositories of the REST read routes. */
const mcpReads = (store: ClickHouseStore, retention: ProjectRetention): McpReads => {
  const costs = new CostsRepository(store);
  return {
    calls: callQueries(store, retention),
    threads: new ThreadsReadRepository(store, retention),
    usage: new UsageRepository(store, costs, retention),
    stats: new StatsRepository(store, retention),
    costs,
    projects: new ProjectsRepository(store),
  };
};

/** A process's monitors: its sweep handler fills the queue its scoring task drains, so both come from one instance per process's parts. */
const monitorsByParts = new WeakMap<ServiceParts, Monitors>();
const monitorsOf = (parts: ServiceParts): Monitors => {
  let monitors = monitorsByParts.get(parts);
  if (!monitors) {
    const { store, retention, log, config } = parts;
    monitors = new Monitors({
      store, retention, log, writeCalls: callBatchHandler(parts), completer: evalCompleter(parts),
      sweepIntervalMs: config.MONITORS_SWEEP_INTERVAL_MS, queueSize: config.MONITORS_QUEUE_SIZE,
    });
    monitorsByParts.set(parts, monitors);
  }
  return monitors;
};

const publisherOf = (parts: ServiceParts): EventPublisher<TraceEvent> => {
  if (!parts.publisher) throw new Error("ingest routes need the queue's publisher");
  return parts.publisher;
};

/**
 * The one table the service is built from. A resource names its tables (migrations), the
 * routes it mounts in each HTTP role and what it adds to the worker. To add a resource:
 * its schema under store/<resource>/schema.ts, its queries and repository beside it, its
 * routes under query/ (or ingest/ for high-volume writes through the queue), and one row
 * here (what it adds to the worker's call batches: a row in worker/callWorker.ts). Roles: `ingest`
 * (validated writes → queue), `query` (reads and low-volume writes straight to ClickHouse),
 * `worker` (queue → ClickHouse, and the job runner), `inference` (chat completions on the
 * built-in models, CPU-bound: run it in processes of its own when it is used much).
 */
export const RESOURCES: readonly Resource[] = [
  {
    name: "calls",
    migrations: [CALLS_MIGRATION, CALLS_LONG_LEAVES_MIGRATION, CALLS_PATHS_ONCE_MIGRATION, SPAN_RESOURCES_MIGRATION],
    routes: {
      ingest: (api, parts) => mountCallIngest(api, publisherOf(parts)),
      query: (api, { store, retention }) => mountCallQueries(api, callQueries(store, retention)),
    },
  },
  {
    name: "otlp",
    routes: {
      // OTLP/gRPC, the same exports on OTLP_GRPC_PORT, is a listener of its own: service.ts starts it beside the HTTP server.
      ingest: (api, parts) => mountOtlpIngest(api, publisherOf(parts), otlpLimits(parts.config)),
    },
  },
  {
    name: "threads",
    migrations: [THREADS_MIGRATION],
    // Its aggregates over each call batch: worker/callWorker.ts.
    routes: { query: (api, { store, retention }) => mountThreadQueries(api, { store, retention }) },
  },
  { name: "otel_logs", migrations: [OTEL_LOGS_MIGRATION], routes: { query: (api, { store, retention }) => mountOtelLogsRoutes(api, { store, retention }) } },
  { name: "costs", migrations: [COSTS_MIGRATION], routes: { query: (api, { store }) => mountCostRoutes(api, { store }) } },
  { name: "feedback", migrations: [FEEDBACK_MIGRATION], routes: { query: (api, { store, retention }) => mountFeedbackRoutes(api, { store, retention }) } },
  // Job state for the job runner (worker/jobs/runner.ts); the resources that submit jobs (evaluations, scoring,
  // training) add their job types and start the runner in the worker role.
  { name: "jobs", migrations: [JOBS_MIGRATION] },
  { name: "usage", routes: { query: (api, { store, retention }) => mountUsageRoutes(api, { store, retention }) } },
  {
    name: "projects",
    migrations: [PROJECTS_MIGRATION, PROJECT_SETTINGS_MIGRATION, CALL_REF_BOUNDS_MIGRATION, CALL_REF_BOUNDS_VIEW_MIGRATION, CALL_REF_BOUNDS_BY_WORKER_MIGRATION],
    // The projects seen in each call batch: worker/callWorker.ts.
    routes: {
      query: (api, { store, retention, retentionChanged }) => {
        mountGraphqlRoutes(api, { store });
        mountProjectRoutes(api, { store, retention, retentionChanged });
      },
    },
  },
  { name: "objects", migrations: [OBJECTS_MIGRATION], routes: { query: (api, { store }) => mountObjectRoutes(api, { store }) } },
  {
    name: "files",
    migrations: [FILES_MIGRATION],
    routes: { query: (api, { store, config }) => mountFileRoutes(api, { store, maxFileBytes: config.FILE_MAX_BYTES, objects: objectWriter(store) }) },
  },
  { name: "tables", migrations: [TABLES_MIGRATION, TABLE_SORT_KEYS_MIGRATION], routes: { query: (api, { store }) => mountTableRoutes(api, { store }) } },
  // Reads what objects, tables and calls store; no tables of its own.
  { name: "refs", routes: { query: (api, { store, retention }) => mountRefRoutes(api, { store, retention }) } },
  { name: "annotation_queues", migrations: ANNOTATION_MIGRATIONS, routes: { query: (api, { store, retention }) => mountAnnotationQueueRoutes(api, { store, retention }) } },
  // API keys made over the API (stored hashed) and `/auth/me`; every HTTP process reloads them (auth/keySync.ts, service.ts).
  { name: "keys", migrations: [KEYS_MIGRATION], routes: { query: (api, { store, keys }) => mountAdminKeyRoutes(api, { store, keys }) } },
  // Answers of retried requests (`X-Weave-Retry-Id`) for the operations that record them; read by the HTTP layer (service.ts).
  { name: "retries", migrations: [RETRIES_MIGRATION] },
  // /v2/ ops, datasets, scorers, evaluations, models (objects), evaluation runs, predictions and scores (calls
  // written through the worker's merge in this process, readable at once), eval_results. No tables of its own.
  { name: "v2", routes: { query: (api, parts) => mountV2Routes(api, { store: parts.store, retention: parts.retention, writeCalls: callBatchHandler(parts) }) } },
  {
    name: "inference",
    routes: {
      inference: (api, { config, log, publisher, store, modelThreads }) =>
        mountInference(api, { config, log, publisher, resolvers: modelResolvers(store, modelThreads), listers: [baseModelLister, trainedModelLister(store)], modelThreads }),
      query: (api, { config, log }) => mountInferenceCatalogs(api, config, log),
    },
  },
  // The training API (services/training/) in the query role; its trainer (training.rl, training.sft) on the worker's job runner.
  {
    name: "training",
    migrations: [TRAINING_MIGRATION, TRAINER_MESSAGES_MIGRATION],
    routes: {
      query: (api, { store, jobSubmitter, jobsHealthy, config, modelThreads }) => {
        const baseWeights = (id: string) => modelThreads.baseWeights(id);
        const bases = { ids: async () => baseModels().map((b) => b.id), weights: baseWeights };
        mountTrainingRoutes(api, { store, baseModels: bases, submitter: jobSubmitter });
        mountTrainingHealthRoutes(api, { database: () => store.ping(), cpuQueue: jobsHealthy, trainer: config.TRAINER });
        mountTrainerRoutes(api, store, baseWeights);
      },
    },
    // TRAINER=external: the jobs are relayed to a trainer that speaks the protocol of training/trainerRoutes.ts.
    jobHandlers: ({ store, config, modelThreads }) =>
      config.TRAINER === "external"
        ? trainerRelayJobs(store, { leaseMs: config.TRAINER_LEASE_MS, pollMs: 500 }, (id) => modelThreads.baseWeights(id))
        : trainerJobs(store, modelThreads),
  },
  // evaluate_model, evaluation status and calls/score (query role); their jobs on the worker's job runner, writing
  // calls through the worker's merge in this process and calling the LLM endpoint of evalCompleter.
  {
    name: "evaluations",
    routes: { query: (api, { store, jobSubmitter, retention }) => mountEvaluationRoutes(api, { store, retention, submitter: jobSubmitter }) },
    jobHandlers: (parts) =>
      evaluationJobs({ store: parts.store, retention: parts.retention, writeCalls: callBatchHandler(parts), completer: evalCompleter(parts), maxAttempts: parts.config.JOBS_MAX_ATTEMPTS }),
  },
  // Alert rules (query role) evaluated by the worker, every ALERTS_EVAL_INTERVAL_MS; each state change posted to the
  // rule's webhook by a job on the job runner (one job per change, whichever workers saw it).
  {
    name: "alerts",
    migrations: [ALERTS_MIGRATION],
    routes: { query: (api, { store, config }) => mountAlertRoutes(api, { store, targets: new WebhookTargets(config.ALERTS_ALLOWED_HOSTS) }) },
    jobHandlers: ({ store, config }) => alertWebhookJobs({ alerts: new AlertsRepository(store), targets: new WebhookTargets(config.ALERTS_ALLOWED_HOSTS) }),
    workerTasks: ({ store, retention, config, log }) => [
      new AlertEvaluator(
        { alerts: new AlertsRepository(store), metrics: new AlertMetrics(store, retention), jobs: new JobsRepository(store) },
        { intervalMs: config.ALERTS_EVAL_INTERVAL_MS, log },
      ),
    ],
  },
  // Monitors: Weave `Monitor` objects (stored by the objects resource); the worker sweeps each active one every
  // MONITORS_SWEEP_INTERVAL_MS (one sweep job per monitor version and slot, whichever workers record it) and scores
  // the sampled calls from a bounded queue. Sweeps run where the scoring task runs: the worker tasks' process.
  {
    name: "monitors",
    routes: { query: (api, { store }) => mountMonitorRoutes(api, { store }) },
    jobHandlers: (parts) => (parts.config.PROCESS_INDEX === 0 ? monitorsOf(parts).handlers : {}),
    workerTasks: (parts) => [monitorsOf(parts).sweeper, monitorsOf(parts).scorer],
  },
  // The web UI's static files (ui/, built by scripts/build-ui.sh): a client of the API, no tables.
  { name: "ui", routes: { query: (api) => mountUiRoutes(api) } },
  // The MCP server at /mcp (services/mcp/): read-only tools for agents and IDEs over what the resources above store.
  { name: "mcp", routes: { query: (api, { store, retention, log }) => mountMcpRoutes(api, { reads: mcpReads(store, retention), log }) } },
];

/** Every resource's migrations, in version order. */
export const MIGRATIONS: readonly Migration[] = RESOURCES.flatMap((r) => r.migrations ?? []).sort((a, b) => a.version - b.version);

/** Mounts the routes of every resource for the HTTP roles this process runs. */
export function mountRoutes(api: HttpApi, roles: ReadonlySet<RoleName>, parts: ServiceParts): void {
  for (const role of ["ingest", "query", "inference"] as const) {
    if (!roles.has(role)) continue;
    const before = api.operations.length;
    for (const resource of RESOURCES) resource.routes?.[role]?.(api, parts);
    // An ingest write that waited for the queued writes before it (read-your-writes) would make ingest synchronous.
    const unqueued = role === "ingest" ? api.operations.slice(before).filter((op) => !op.queued) : [];
    if (unqueued.length > 0) throw new Error(`ingest operations must be queued: ${unqueued.map((op) => op.id).join(", ")}`);
  }
}

/** Every resource's periodic worker tasks (not started). */
export function workerTasks(parts: ServiceParts): WorkerTask[] {
  return RESOURCES.flatMap((resource) => resource.workerTasks?.(parts) ?? []);
}

/** Every resource's job handlers, by job type (a type registered twice is a wiring mistake). */
export function jobHandlers(parts: ServiceParts): Record<string, JobHandler> {
  const handlers: Record<string, JobHandler> = {};
  for (const resource of RESOURCES) {
    for (const [type, handler] of Object.entries(resource.jobHandlers?.(parts) ?? {})) {
      if (handlers[type]) throw new Error(`job type ${type} is registered twice`);
      handlers[type] = handler;
    }
  }
  return handlers;
}
