import { z } from "zod";

/**
 * Every tunable, parsed once at start from the environment. Defaults are named here;
 * an invalid value stops the process with the variable's name.
 */
export const DEFAULTS = {
  PORT: 8080,
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
  BATCH_MAX_BYTES: 8 * 1024 * 1024,
  LOG_BATCHES_IN_FLIGHT: 2,
  LOG_EXPORT_WRITERS: 1,
  BATCH_MAX_WAIT_MS: 200,
  QUEUE_MAX_PENDING_EVENTS: 200_000,
  QUEUE_MAX_PENDING_BYTES: 64 * 1024 * 1024,
  LOG_MAX_BYTES: 1024 ** 3,
  PROCESSES: 1,
  JOBS_CONCURRENCY: 2,
  JOBS_MAX_ATTEMPTS: 5,
  JOBS_LEASE_MS: 30_000,
  TRAINER_LEASE_MS: 60_000,
  CHAT_MAX_TOKENS: 512,
  INFERENCE_MODEL_CACHE_BYTES: 512 * 1024 * 1024,
  INFERENCE_CATALOG_REFRESH_MS: 3_600_000,
} as const;

/** The roles a process can run; what each one mounts and runs is the table in services/roles.ts. */
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

const EnvVariables = z.object({
  ROLE: Role.default("all"),
  PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULTS.PORT),
  HOST: z.string().default(DEFAULTS.HOST),
  /** Where a worker-only process serves /health and /metrics (unset: it serves no HTTP); the API roles serve them on PORT. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  DATA_DIR: z.string().default(DEFAULTS.DATA_DIR),
  CLICKHOUSE_URL: z.string().url().optional(),
  CLICKHOUSE_DATABASE: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).default(DEFAULTS.CLICKHOUSE_DATABASE),
  /** A ClickHouse cluster (remote_servers) to spread the schema over: Replicated local tables, Distributed tables over them. */
  CLICKHOUSE_CLUSTER: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional(),
  KAFKA_BROKERS: list.optional(),
  KAFKA_TOPIC: z.string().default(DEFAULTS.KAFKA_TOPIC),
  KAFKA_GROUP_ID: z.string().default(DEFAULTS.KAFKA_GROUP_ID),
  KAFKA_JOBS_TOPIC: z.string().optional(),
  KAFKA_SEND_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULTS.KAFKA_SEND_TIMEOUT_MS),
  AUTH_KEYS: jsonArray(z.array(AuthKey).min(1)).optional(),
  MAX_BODY_BYTES: z.coerce.number().int().positive().default(DEFAULTS.MAX_BODY_BYTES),
  OTLP_MAX_BODY_BYTES: z.coerce.number().int().positive().default(DEFAULTS.OTLP_MAX_BODY_BYTES),
  OTLP_MAX_SPAN_BYTES: z.coerce.number().int().positive().default(DEFAULTS.OTLP_MAX_SPAN_BYTES),
  JSON_MAX_DEPTH: z.coerce.number().int().min(1).max(10_000).default(DEFAULTS.JSON_MAX_DEPTH),
  FILE_MAX_BYTES: z.coerce.number().int().positive().default(DEFAULTS.FILE_MAX_BYTES),
  BATCH_MAX_EVENTS: z.coerce.number().int().positive().default(DEFAULTS.BATCH_MAX_EVENTS),
  /** Embedded log: log bytes per worker batch at most (a bound for fat events; 10,000 OTLP spans are ~30 MB). */
  BATCH_MAX_BYTES: z.coerce.number().int().positive().default(DEFAULTS.BATCH_MAX_BYTES),
  BATCH_MAX_WAIT_MS: z.coerce.number().int().positive().default(DEFAULTS.BATCH_MAX_WAIT_MS),
  /** Embedded log: batches its worker handles at once (the next is merged while the store writes one). */
  LOG_BATCHES_IN_FLIGHT: z.coerce.number().int().min(1).max(8).default(DEFAULTS.LOG_BATCHES_IN_FLIGHT),
  LOG_EXPORT_WRITERS: z.coerce.number().int().min(0).max(8).default(DEFAULTS.LOG_EXPORT_WRITERS),
  PROCESSES: z.coerce.number().int().min(1).max(256).default(DEFAULTS.PROCESSES),
  /** Which of the PROCESSES this one is (its log directory); set by the cluster's primary, not by users. */
  PROCESS_INDEX: z.coerce.number().int().min(0).max(255).default(0),
  LOG_MAX_BYTES: z.coerce.number().int().positive().default(DEFAULTS.LOG_MAX_BYTES),
  QUEUE_MAX_PENDING_EVENTS: z.coerce.number().int().positive().default(DEFAULTS.QUEUE_MAX_PENDING_EVENTS),
  QUEUE_MAX_PENDING_BYTES: z.coerce.number().int().positive().default(DEFAULTS.QUEUE_MAX_PENDING_BYTES),
  TRUSTED_PROXIES: list.default([]),
  JOBS_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(DEFAULTS.JOBS_CONCURRENCY),
  JOBS_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(DEFAULTS.JOBS_MAX_ATTEMPTS),
  JOBS_LEASE_MS: z.coerce.number().int().min(1_000).default(DEFAULTS.JOBS_LEASE_MS),
  /** Who runs training jobs: the built-in CPU trainer, or an external one through the relay (README "External trainer protocol"). */
  TRAINER: z.enum(["builtin", "external"]).default("builtin"),
  /** Longest silence of an external trainer on a job it claimed before the job fails. */
  TRAINER_LEASE_MS: z.coerce.number().int().min(1_000).default(DEFAULTS.TRAINER_LEASE_MS),
  CHAT_MAX_TOKENS: z.coerce.number().int().min(1).max(100_000).default(DEFAULTS.CHAT_MAX_TOKENS),
  INFERENCE_MODEL_CACHE_BYTES: z.coerce.number().int().positive().default(DEFAULTS.INFERENCE_MODEL_CACHE_BYTES),
  INFERENCE_UPSTREAM_URL: z.string().url().optional(),
  INFERENCE_UPSTREAM_KEY: z.string().optional(),
  INFERENCE_UPSTREAM_MODELS: list.default([]),
  /** An OpenAI-compatible base URL for evaluation and scoring jobs' LLM calls; unset = the built-in models in process. */
  EVAL_LLM_BASE_URL: z.string().url().optional(),
  EVAL_LLM_API_KEY: z.string().optional(),
  INFERENCE_CATALOG_URLS: jsonArray(CatalogUrls).default({}),
  INFERENCE_CATALOG_REFRESH_MS: z.coerce.number().int().min(1_000).default(DEFAULTS.INFERENCE_CATALOG_REFRESH_MS),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});
const EnvSchema = EnvVariables.transform((env) => ({ ...env, KAFKA_JOBS_TOPIC: env.KAFKA_JOBS_TOPIC ?? defaultJobsTopic(env.KAFKA_TOPIC) }));

/** The names of every environment variable the service reads (deploy/ is checked against them). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvVariables.shape);

export type Config = z.infer<typeof EnvSchema>;

export class ConfigError extends Error {}

/** Variables earlier versions read, and why setting one now stops the start rather than being ignored. */
const REMOVED_VARIABLES: Readonly<Record<string, string>> = {
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
