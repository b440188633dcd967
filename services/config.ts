import { z } from "zod";
import { ROLES } from "./keyRoles.js";

/**
 * Every tunable, parsed once at start from the environment. Defaults are named here;
 * an invalid value stops the process with the variable's name.
 */
export const DEFAULTS = {
  PORT: 8080,
  OTLP_GRPC_PORT: 4317,
  HOST: "0.0.0.0",
  DATA_DIR: "./data",
  CLICKHOUSE_DATABASE: "tracehouse",
  KAFKA_TOPIC: "tracehouse.events",
  KAFKA_GROUP_ID: "tracehouse-worker",
  KAFKA_SEND_TIMEOUT_MS: 10_000,
  MAX_BODY_BYTES: 32 * 1024 * 1024,
  OTLP_MAX_BODY_BYTES: 20 * 1024 * 1024,
  OTLP_MAX_SPAN_BYTES: 4 * 1024 * 1024,
  JSON_MAX_DEPTH: 256,
  FILE_MAX_BYTES: 1024 * 1024 * 1024,
  BATCH_MAX_EVENTS: 50_000,
  // The worker's batch on the durable log; with Kafka the KAFKA_ values (batchDefaults below).
  BATCH_MAX_BYTES: 6 * 1024 * 1024,
  KAFKA_BATCH_MAX_BYTES: 12 * 1024 * 1024,
  LOG_BATCHES_IN_FLIGHT: 2,
  LOG_EXPORT_WRITERS: 2,
  // As BATCH_MAX_BYTES: the log's wait, then Kafka's.
  BATCH_MAX_WAIT_MS: 200,
  KAFKA_BATCH_MAX_WAIT_MS: 2_000,
  QUEUE_MAX_PENDING_EVENTS: 200_000,
  QUEUE_MAX_PENDING_BYTES: 64 * 1024 * 1024,
  LOG_MAX_BYTES: 1024 ** 3,
  MAX_LAG_MS: 2_000,
  READ_YOUR_WRITES_WAIT_MS: 5_000,
  LAG_BULK_ITEMS: 50,
  LAG_BULK_BYTES: 1024 * 1024,
  PROCESSES: 1,
  HEAP_GROWING_PERCENT: 150,
  JOBS_CONCURRENCY: 2,
  JOBS_MAX_ATTEMPTS: 5,
  JOBS_LEASE_MS: 30_000,
  TRAINER_LEASE_MS: 60_000,
  CHAT_MAX_TOKENS: 512,
  INFERENCE_MODEL_CACHE_BYTES: 512 * 1024 * 1024,
  MODEL_THREADS: 1,
  INFERENCE_CATALOG_REFRESH_MS: 3_600_000,
  RETENTION_INTERVAL_MS: 600_000,
  ALERTS_EVAL_INTERVAL_MS: 30_000,
  MONITORS_SWEEP_INTERVAL_MS: 10_000,
  MONITORS_QUEUE_SIZE: 10_000,
} as const;

const BYTE_UNITS = [
  ["GiB", 1024 ** 3],
  ["MiB", 1024 ** 2],
  ["KiB", 1024],
] as const;

/** A byte count in the largest binary unit that divides it (as the descriptions and docs/configuration.md write sizes). */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of BYTE_UNITS) if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  return String(bytes);
}

/** The roles a process can run; what each one mounts and runs is the table in services/resources.ts. */
export const ROLE_NAMES = ["ingest", "worker", "query", "inference"] as const;
export type RoleName = (typeof ROLE_NAMES)[number];
const isRoleName = (name: string): name is RoleName => (ROLE_NAMES as readonly string[]).includes(name);

/** `all`, one role, or a comma-separated list of roles. */
const Role = z
  .string()
  .refine((v) => v === "all" || v.split(",").every((r) => isRoleName(r.trim())), `must be "all" or roles from ${ROLE_NAMES.join(", ")}, comma-separated`);

export function rolesOf(setting: string): ReadonlySet<RoleName> {
  if (setting === "all") return new Set(ROLE_NAMES);
  return new Set(setting.split(",").map((r) => r.trim()).filter(isRoleName));
}

/** The jobs topic when KAFKA_JOBS_TOPIC is not set: beside the call events topic. */
export const defaultJobsTopic = (eventsTopic: string): string => `${eventsTopic}.jobs`;

const AuthKey = z.object({
  key: z.string().min(16, "keys must be at least 16 characters"),
  username: z.string().min(1),
  entities: z.array(z.string().min(1)).min(1),
  role: z.enum(ROLES).optional(),
});
export type AuthKey = z.infer<typeof AuthKey>;

const jsonArray = <T extends z.ZodType>(schema: T) =>
  z.string().transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: "custom", message: "is not valid JSON" });
      return z.NEVER;
    }
  }).pipe(schema);

const list = z.string().transform((s) => s.split(",").map((p) => p.trim()).filter(Boolean));

/** `{"analysis_models": url, "hardware": url, "router_models": url}`, each optional. */
const CatalogUrls = z.object({ analysis_models: z.string().url(), hardware: z.string().url(), router_models: z.string().url() }).partial().strict();

/**
 * Every variable the service reads. Each one's `.describe()` is its documentation: docs/configuration.md
 * is rendered from this object and DEFAULTS (scripts/configDoc.ts), and a test fails when they differ.
 */
export const EnvVariables = z.object({
  ROLE: Role.default("all").describe("`all` runs ingest, worker, query and inference in one process; one role or a comma-separated list (`ingest,query`) runs those. Ingest (or inference) without the worker, or the worker without them, needs `KAFKA_BROKERS`."),
  PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULTS.PORT).describe("HTTP port of the API, the UI, `/health` and `/metrics`."),
  HOST: z.string().default(DEFAULTS.HOST).describe("HTTP listen address (and OTLP/gRPC's)."),
  OTLP_GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULTS.OTLP_GRPC_PORT).describe("Port of OTLP over gRPC (the trace and logs services' `Export`, plaintext HTTP/2; TLS at a proxy), served by the processes that run ingest, with the limits and rules of OTLP/HTTP (docs/clients.md); `0` turns it off."),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional().describe("Where a worker-only process (`ROLE=worker`) serves `/health` and `/metrics`; unset, it serves no HTTP. The other roles serve both on `PORT`."),
  DATA_DIR: z.string().default(DEFAULTS.DATA_DIR).describe("The local ClickHouse's data (without `CLICKHOUSE_URL`), the durable log (`log/<topic>/process-<i>/`) and the generated local key (`local-api-key.json`)."),
  CLICKHOUSE_URL: z.string().url().optional().describe("An external ClickHouse (its HTTP interface); unset = start a private one under `DATA_DIR`."),
  CLICKHOUSE_DATABASE: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).default(DEFAULTS.CLICKHOUSE_DATABASE).describe("The database; created and migrated at every start."),
  CLICKHOUSE_CLUSTER: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional().describe("A cluster of the server's `remote_servers`: the schema is made `ON CLUSTER` as Replicated local tables with Distributed tables of the usual names over them (docs/operations.md). Needs ZooKeeper or ClickHouse Keeper and the `{shard}`/`{replica}` macros."),
  CLICKHOUSE_ALTER_CLUSTER: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional().describe("With `CLICKHOUSE_CLUSTER`: a cluster of `remote_servers` with the same shards in the same order, one replica each. The ALTERs of the Replicated tables (added columns, the retention job's deletes and dropped months) run `ON CLUSTER` on it and reach the other replicas through replication: ClickHouse 18.16's distributed-DDL worker can stop for good when two replicas of a shard run one such ALTER (docs/operations.md). Unset: they run on `CLICKHOUSE_CLUSTER`."),
  KAFKA_BROKERS: list.optional().describe("Comma-separated brokers. Set: writes are published to and consumed from Kafka (scale-out); unset: the durable local log under `DATA_DIR`."),
  KAFKA_TOPIC: z.string().default(DEFAULTS.KAFKA_TOPIC).describe("Topic of call events; dead letters go to `<topic>.dead-letter`."),
  KAFKA_GROUP_ID: z.string().default(DEFAULTS.KAFKA_GROUP_ID).describe("The workers' consumer group (the job runners use `<group>.jobs`)."),
  KAFKA_JOBS_TOPIC: z.string().optional().describe("Topic of submitted jobs (evaluations, scoring, training); unset = `<KAFKA_TOPIC>.jobs`."),
  KAFKA_SEND_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULTS.KAFKA_SEND_TIMEOUT_MS).describe("Longest a write waits for Kafka's acknowledgement, queueing included; then it is answered 503 with `Retry-After`, so a broker gone or hung does not hold requests open. The broker may still take the message: the client's retry rewrites the same call."),
  AUTH_KEYS: jsonArray(z.array(AuthKey).min(1)).optional().describe("JSON array `[{\"key\": \"...\", \"username\": \"...\", \"entities\": [\"acme\"], \"role\": \"admin\"}]`, `\"*\"` = every entity; `role` (`viewer`, `writer` or `admin`, the default) applies in each of its entities (docs/keys.md); keys of at least 16 characters. Unset: a local key reaching every entity is generated once, kept in `DATA_DIR/local-api-key.json` and printed at start."),
  MAX_BODY_BYTES: z.coerce.number().int().positive().default(DEFAULTS.MAX_BODY_BYTES).describe("JSON request body limit (413 beyond)."),
  OTLP_MAX_BODY_BYTES: z.coerce.number().int().positive().default(DEFAULTS.OTLP_MAX_BODY_BYTES).describe("OTLP body limit, applied while decompressing (413 beyond)."),
  OTLP_MAX_SPAN_BYTES: z.coerce.number().int().positive().default(DEFAULTS.OTLP_MAX_SPAN_BYTES).describe("One span's size limit; a larger span is rejected in `partial_success`."),
  JSON_MAX_DEPTH: z.coerce.number().int().min(1).max(10_000).default(DEFAULTS.JSON_MAX_DEPTH).describe("Deepest nesting of objects and arrays in a JSON request body (400 beyond)."),
  FILE_MAX_BYTES: z.coerce.number().int().positive().default(DEFAULTS.FILE_MAX_BYTES).describe("Largest file `/file/create` and `/image/create` store (413 beyond; nothing of the upload is kept)."),
  BATCH_MAX_EVENTS: z.coerce.number().int().positive().default(DEFAULTS.BATCH_MAX_EVENTS).describe("Most events the worker stores in one batch: ClickHouse's CPU per row falls as inserts grow."),
  BATCH_MAX_BYTES: z.coerce.number().int().positive().optional().describe(`Most log bytes (durable log) or message bytes (Kafka) in one worker batch (a single bigger record still goes, alone). The worker holds a batch and its rows until they are stored, so this bounds its memory when events are fat (OTLP exports), and how long one batch takes to store: positions and offsets are committed a batch at a time, so the lag bound (\`MAX_LAG_MS\`) sees the worker's lag in steps of a batch. A Kafka worker buffers two batches: one stored while the next is fetched. Unset: ${formatBytes(DEFAULTS.BATCH_MAX_BYTES)} on the durable log, ${formatBytes(DEFAULTS.KAFKA_BATCH_MAX_BYTES)} with Kafka (see \`BATCH_MAX_WAIT_MS\`).`),
  BATCH_MAX_WAIT_MS: z.coerce.number().int().positive().optional().describe(`Longest the worker waits to fill a batch: sooner once \`BATCH_MAX_EVENTS\` or \`BATCH_MAX_BYTES\` are waiting, at once when no batch went out in the last \`BATCH_MAX_WAIT_MS\` (a lone write to an idle worker does not wait), and with Kafka once fetches stop bringing anything new (the burst is over). Under a steady stream it is how often each worker inserts: it bounds how soon a write is stored under load, and how many inserts a busy process makes. Unset: ${DEFAULTS.BATCH_MAX_WAIT_MS} ms on the durable log, ${DEFAULTS.KAFKA_BATCH_MAX_WAIT_MS} ms with Kafka, where each insert into a replicated table costs every replica a part to fetch and ZooKeeper a few dozen transactions (docs/operations.md, "Running at scale").`),
  LOG_BATCHES_IN_FLIGHT: z.coerce.number().int().min(1).max(8).default(DEFAULTS.LOG_BATCHES_IN_FLIGHT).describe("Durable log: batches its worker handles at once, so that one is merged while ClickHouse stores the one before. Positions are committed in order; each batch in flight holds its memory."),
  LOG_EXPORT_WRITERS: z.coerce.number().int().min(0).max(8).default(DEFAULTS.LOG_EXPORT_WRITERS).describe("Durable log: writer threads beside the log's worker thread; a batch made only of OTLP exports goes to one of them (waiting while all are busy), which maps the spans and stores their calls, so that the worker thread stays free for small writes (0: the worker thread does it all). They start at the first batch of exports. Each holds a V8 heap of its own; as many as `LOG_BATCHES_IN_FLIGHT` keep every batch in flight on a thread of its own."),
  HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(1000).default(DEFAULTS.HEAP_GROWING_PERCENT).describe("How far past what a full garbage collection left each V8 heap (every thread's) may grow before the next one, in percent (V8's `--heap-growing-percent`; 0: V8's own factor, which lets heaps grow up to 4 times under a high allocation rate). Lower holds less garbage (a lower peak RSS) for more collector CPU; the figures are in docs/benchmarks.md, section Memory."),
  PROCESSES: z.coerce.number().int().min(1).max(256).default(DEFAULTS.PROCESSES).describe("Copies of the service on one port (Node's cluster module), each with its own log and worker; a process that dies is replaced by one that replays its log. For machines with more cores than ClickHouse needs (docs/operations.md)."),
  PROCESS_INDEX: z.coerce.number().int().min(0).max(255).default(0).describe("Which of the `PROCESSES` this one is (its log directory); set by the cluster's primary, not by users."),
  LOG_MAX_BYTES: z.coerce.number().int().positive().default(DEFAULTS.LOG_MAX_BYTES).describe("Bytes the durable log may hold that are not yet stored (while ClickHouse is down, say); beyond it ingest answers 429 with `Retry-After`. A lone request is always admitted."),
  MAX_LAG_MS: z.coerce.number().int().min(0).default(DEFAULTS.MAX_LAG_MS).describe("While the worker is storing but the oldest write it has not stored yet waited longer than this past `BATCH_MAX_WAIT_MS` (the wait for its batch), a bulk write (see `LAG_BULK_ITEMS`) waits up to 5 s for that to change and is then answered 429 with `Retry-After`, while small writes are admitted at once. On the durable log, waiting writes also go in, in order, for half the log bytes the worker stores meanwhile: its backlog shrinks, and it never runs dry while writes wait. With Kafka each ingest process reads the worker group's committed offsets against the topic's end every 250 ms, per partition: this keeps the group's backlog far inside the brokers' retention. A worker that stored nothing for 10 s (ClickHouse down) does not count: the log then acknowledges up to `LOG_MAX_BYTES`, Kafka up to its retention. 0: no lag bound."),
  READ_YOUR_WRITES_WAIT_MS: z.coerce.number().int().min(0).default(DEFAULTS.READ_YOUR_WRITES_WAIT_MS).describe("Longest an operation on a project waits for that project's queued writes to be stored before it runs anyway, on what is stored (and logs a warning): a worker far behind, or a store that is down, must not hold reads for long (docs/architecture.md, \"The path of a read\"). The suite sets it to 60 s: its reads must see their writes however loaded the machine."),
  LAG_BULK_ITEMS: z.coerce.number().int().min(0).default(DEFAULTS.LAG_BULK_ITEMS).describe("A write of more calls, spans or log records than this (an OTLP export of its spans, an `upsert_batch` of its parts) is bulk for `MAX_LAG_MS`."),
  LAG_BULK_BYTES: z.coerce.number().int().positive().default(DEFAULTS.LAG_BULK_BYTES).describe("A write of more bytes than this (log bytes; with Kafka, request bytes) is bulk for `MAX_LAG_MS`, whatever its count. Durable log: a write that is not bulk and lands behind more than this many log bytes not yet stored is stored ahead of them (readable at once, committed in order)."),
  QUEUE_MAX_PENDING_EVENTS: z.coerce.number().int().positive().default(DEFAULTS.QUEUE_MAX_PENDING_EVENTS).describe("Events accepted and not yet durable (waiting for the log's sync, or in flight to Kafka) before ingest answers 429 with `Retry-After`."),
  QUEUE_MAX_PENDING_BYTES: z.coerce.number().int().positive().default(DEFAULTS.QUEUE_MAX_PENDING_BYTES).describe("The same bound in bytes of the requests those events came from (a span weighs far more than a call end); a lone request is always admitted."),
  TRUSTED_PROXIES: list.default([]).describe("Comma-separated proxy addresses whose `X-Forwarded-For` `/geolocate` honours."),
  JOBS_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(DEFAULTS.JOBS_CONCURRENCY).describe("Most jobs one runner runs at once (jobs of one serial key, e.g. a model, run one at a time)."),
  JOBS_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(DEFAULTS.JOBS_MAX_ATTEMPTS).describe("Attempts of a job that fails retryably (or whose runner dies) before it is failed."),
  JOBS_LEASE_MS: z.coerce.number().int().min(1_000).default(DEFAULTS.JOBS_LEASE_MS).describe("A running job whose runner gave no sign of life for this long is taken over by another runner; machine clocks must agree within half of it."),
  TRAINER: z.enum(["builtin", "external"]).default("builtin").describe("Who runs training jobs: `builtin`, the CPU trainer in the worker; `external`, a trainer outside that the worker relays each job to over HTTP (docs/training.md, \"External trainer protocol\")."),
  TRAINER_LEASE_MS: z.coerce.number().int().min(1_000).default(DEFAULTS.TRAINER_LEASE_MS).describe("`TRAINER=external`: longest silence of a trainer on a job it claimed before the job fails."),
  CHAT_MAX_TOKENS: z.coerce.number().int().min(1).max(100_000).default(DEFAULTS.CHAT_MAX_TOKENS).describe("Most tokens one choice of a chat completion generates (on the built-in models, also in evaluation jobs)."),
  INFERENCE_MODEL_CACHE_BYTES: z.coerce.number().int().positive().default(DEFAULTS.INFERENCE_MODEL_CACHE_BYTES).describe("Weights of loaded models each model thread keeps (least recently used go first)."),
  MODEL_THREADS: z.coerce.number().int().min(1).max(16).default(DEFAULTS.MODEL_THREADS).describe("Most worker threads that run the built-in language model: chat completions, evaluation jobs' completions and training steps (the thread that answers requests runs none of it). Each is started at its first work and holds a V8 heap, tfjs and loaded models of its own; more than one lets a completion run beside a training job on another core."),
  INFERENCE_UPSTREAM_URL: z.string().url().optional().describe("An OpenAI-compatible base URL (vLLM, Ollama, another tracehouse: `http://host:8000/v1`) that the models of `INFERENCE_UPSTREAM_MODELS` are sent to."),
  INFERENCE_UPSTREAM_KEY: z.string().optional().describe("The Bearer key of `INFERENCE_UPSTREAM_URL`."),
  INFERENCE_UPSTREAM_MODELS: list.default([]).describe("Comma-separated model names sent upstream (`prefix*` matches by prefix); the request is forwarded as sent, the answer passed through and recorded like a local one."),
  EVAL_LLM_BASE_URL: z.string().url().optional().describe("An OpenAI-compatible base URL (`…/v1`) for the LLM calls of evaluation and scoring jobs; unset = the built-in models in the worker's process."),
  EVAL_LLM_API_KEY: z.string().optional().describe("The Bearer key of `EVAL_LLM_BASE_URL`."),
  INFERENCE_CATALOG_URLS: jsonArray(CatalogUrls).default({}).describe("JSON `{\"analysis_models\": url, \"hardware\": url, \"router_models\": url}`, each optional: where the inference information catalogs are refreshed from (unset: the shipped ones)."),
  INFERENCE_CATALOG_REFRESH_MS: z.coerce.number().int().min(1_000).default(DEFAULTS.INFERENCE_CATALOG_REFRESH_MS).describe("How often those catalogs are fetched."),
  RETENTION_DAYS: z.coerce.number().int().min(1).optional().describe("Days a project's calls are kept (by `started_at`) when the project sets no `retention_days` of its own (`PUT /projects/{entity}/{project}/settings`); unset = keep everything. Older calls leave every read within a minute and are deleted by the worker's retention job (docs/operations.md, \"Retention and disk\")."),
  RETENTION_INTERVAL_MS: z.coerce.number().int().min(1_000).default(DEFAULTS.RETENTION_INTERVAL_MS).describe("How often the worker's retention job deletes the calls past their project's retention (it also runs at start and soon after a project's settings change in the same process)."),
  ALERTS_ALLOWED_HOSTS: list.default([]).describe("Comma-separated hosts (names or IP addresses, as written in the URL) that alert webhooks may post to although they are loopback or private (`localhost`, 127/8, 10/8, 172.16/12, 192.168/16, 169.254/16, ::1, fc00::/7, fe80::/10); any other such webhook is refused with 422 at `/alerts/create` and not posted to (docs/resources.md, \"Alerts\")."),
  MONITORS_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(20_000).default(DEFAULTS.MONITORS_SWEEP_INTERVAL_MS).describe("How often the worker looks for calls that ended and match an active monitor (at most 20 s, so that an idle service scores a matching call within 60 s of its end; docs/resources.md, \"Monitors\")."),
  MONITORS_QUEUE_SIZE: z.coerce.number().int().min(1).max(1_000_000).default(DEFAULTS.MONITORS_QUEUE_SIZE).describe("Most (monitor, call) items waiting to be scored in a worker process; when full the oldest are dropped and counted in `monitor_scoring_dropped_total`."),
  ALERTS_EVAL_INTERVAL_MS: z.coerce.number().int().min(100).max(30_000).default(DEFAULTS.ALERTS_EVAL_INTERVAL_MS).describe("How often the worker evaluates every alert rule (at most 30 s, so that a rule is evaluated at least that often)."),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info").describe("pino log level (JSON lines on stdout, buffered: written out within 100 ms, never waited on by a request); at `info` one line per request, `warn` drops those."),
});
const EnvSchema = EnvVariables.transform((env) => ({
  ...env,
  KAFKA_JOBS_TOPIC: env.KAFKA_JOBS_TOPIC ?? defaultJobsTopic(env.KAFKA_TOPIC),
  ...batchDefaults(env),
}));

/** Whether writes go through Kafka (scale-out) rather than the durable local log. */
export const usesKafka = (env: { KAFKA_BROKERS?: readonly string[] }): boolean => (env.KAFKA_BROKERS?.length ?? 0) > 0;

/**
 * A worker's batch when `BATCH_MAX_WAIT_MS` and `BATCH_MAX_BYTES` are unset: with Kafka fewer,
 * bigger ones, since its store is a cluster where each insert costs every replica a part to
 * fetch and ZooKeeper a few dozen transactions (docs/operations.md, "Running at scale").
 */
function batchDefaults(env: { KAFKA_BROKERS?: readonly string[]; BATCH_MAX_WAIT_MS?: number; BATCH_MAX_BYTES?: number }): { BATCH_MAX_WAIT_MS: number; BATCH_MAX_BYTES: number } {
  const kafka = usesKafka(env);
  return {
    BATCH_MAX_WAIT_MS: env.BATCH_MAX_WAIT_MS ?? (kafka ? DEFAULTS.KAFKA_BATCH_MAX_WAIT_MS : DEFAULTS.BATCH_MAX_WAIT_MS),
    BATCH_MAX_BYTES: env.BATCH_MAX_BYTES ?? (kafka ? DEFAULTS.KAFKA_BATCH_MAX_BYTES : DEFAULTS.BATCH_MAX_BYTES),
  };
}

/** The names of every environment variable the service reads (deploy/ is checked against them). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvVariables.shape);

export type Config = z.infer<typeof EnvSchema>;

export class ConfigError extends Error {}

/**
 * Variables read outside this schema, where they are used: settings of the build and of
 * diagnosis, not of a running service. docs/configuration.md lists them too, and
 * test/docs/configuration.test.ts fails when services/ reads a variable named in neither place.
 */
export const OTHER_VARIABLES: Readonly<Record<string, string>> = {
  LM_CACHE_DIR: "Where the built-in base models' weights are cached (`services/lm/baseModelCatalog.ts`); unset: `.cache/lm` at the repository root. `make base-model` writes them there.",
  CLICKHOUSE_LOG_QUERIES: "`1`: the private local ClickHouse keeps `system.query_log` and `system.part_log` (`services/store/localServer.ts`), to see what each query, insert and merge cost.",
};

/** Variables earlier versions read, and why setting one now stops the start rather than being ignored. */
export const REMOVED_VARIABLES: Readonly<Record<string, string>> = {
  LOG_MAX_LAG_MS: "renamed MAX_LAG_MS: the lag bound holds with Kafka too",
  LOG_LAG_BULK_ITEMS: "renamed LAG_BULK_ITEMS: the lag bound holds with Kafka too",
  LOG_LAG_BULK_BYTES: "renamed LAG_BULK_BYTES: the lag bound holds with Kafka too",
  EMBEDDED_QUEUE: "the embedded queue is always the durable log (the in-memory queue acknowledged writes it could lose)",
  LOG_CONSUMER: "the log's consumer always runs in a worker thread of its own",
  WORKER_LANES: "it belonged to the in-memory queue",
};

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const removed = Object.keys(present).filter((name) => name in REMOVED_VARIABLES);
  if (removed.length > 0) throw new ConfigError(`invalid configuration: ${removed.map((name) => `${name} is no longer read: ${REMOVED_VARIABLES[name]}; unset it`).join("; ")}`);
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "environment"}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  return parsed.data;
}
