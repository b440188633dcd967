import type { Server } from "node:http";
import { resolve } from "node:path";
import type { Logger } from "pino";
import { KeyRing, localKeys } from "./auth/keys.js";
import { KeySync } from "./auth/keySync.js";
import { KeysRepository } from "./store/keys/keysRepository.js";
import { rolesOf, type Config } from "./config.js";
import { setUpMetrics } from "./metrics.js";
import type { Operation } from "./contract/operation.js";
import { HttpApi } from "./http/app.js";
import { mountDocs, mountServiceRoutes } from "./query/serviceRoutes.js";
import { traceEventsTopic, type TraceEvent } from "./queue/events.js";
import { jobsTopic, type JobMessage } from "./queue/jobs.js";
import { DurableLogQueue } from "./queue/durableLog/durableLogQueue.js";
import { logDirsBeyond, processLogDir } from "./queue/durableLog/files.js";
import type { LagLimits } from "./queue/lagBound.js";
import { moduleBeside } from "./supervisedThread.js";
import { ModelThreads } from "./lm/modelThreads.js";
import type { KafkaSettings } from "./queue/kafka/client.js";
import { KafkaEventConsumer, type ConsumerOptions } from "./queue/kafka/consumer.js";
import { KafkaStoredOffsets } from "./queue/kafka/groupOffsets.js";
import { KafkaEventPublisher } from "./queue/kafka/publisher.js";
import type { EventConsumer, EventPublisher, ReadYourWrites, Topic } from "./queue/queue.js";
import { measuredDelivery } from "./worker/delivery.js";
import { ClickHouseStore, type InjectedClickHouse } from "./store/clickhouse.js";
import { startLocalClickHouse, type LocalClickHouse } from "./store/localServer.js";
import { ensureDatabase, migrate } from "./store/migrations.js";
import { RetriesRepository } from "./store/retries/retriesRepository.js";
import { JobsRepository } from "./store/jobs/jobsRepository.js";
import { JobRunner } from "./worker/jobs/runner.js";
import { JobSubmitter, jobIntake } from "./worker/jobs/submitter.js";
import { jobHandlers, MIGRATIONS, mountRoutes, workerTasks, type ServiceParts, type WorkerTask } from "./resources.js";
import { callBatchHandler } from "./worker/callWorker.js";
import type { LogWorkerData } from "./worker/logWorker.js";
import { RetentionJob } from "./worker/retentionJob.js";
import { startOtlpGrpc, type OtlpGrpcServer } from "./ingest/otlp/grpc.js";
import { otlpLimits } from "./ingest/otlp/export.js";
import { RetentionExpiry } from "./store/projects/expiry.js";
import { ProjectRetention } from "./store/projects/retention.js";
import { ProjectSettingsRepository } from "./store/projects/settingsRepository.js";
import { errorText } from "./errors.js";

export interface RunningService {
  readonly url: string | null;
  /** OTLP/gRPC's endpoint (`http://127.0.0.1:<OTLP_GRPC_PORT>`), null where it is not served. */
  readonly otlpGrpcUrl: string | null;
  readonly clickhouseUrl: string;
  readonly apiKey: string | null;
  /** Every operation the HTTP server mounted (empty for a worker-only process). */
  readonly operations: readonly Operation[];
  /** Stop intake → drain the queue and buffers → commit → close clients. */
  stop(): Promise<void>;
}

function kafkaSettings(config: Config, log: Logger): KafkaSettings {
  return { brokers: config.KAFKA_BROKERS ?? [], groupId: config.KAFKA_GROUP_ID, clientId: `tracehouse-${config.ROLE}`, sendTimeoutMs: config.KAFKA_SEND_TIMEOUT_MS, log };
}

/** What a service is given besides its configuration. */
export interface ServiceDependencies {
  /** A ClickHouse to use instead of CLICKHOUSE_URL or a local server (tests on another engine). */
  readonly clickhouse?: InjectedClickHouse;
}

/**
 * The ClickHouse this service uses, migrated: an injected one, CLICKHOUSE_URL, or a private
 * server started under DATA_DIR (then `local` is it, to stop last).
 */
export async function openStore(
  config: Config,
  log: Logger,
  deps: ServiceDependencies = {},
): Promise<{ store: ClickHouseStore; local: LocalClickHouse | null }> {
  let target: string | InjectedClickHouse | undefined = deps.clickhouse ?? config.CLICKHOUSE_URL;
  let local: LocalClickHouse | null = null;
  if (!target) {
    local = await startLocalClickHouse(resolve(config.DATA_DIR));
    target = local.url;
    log.info({ url: target }, "started local ClickHouse");
  }
  await ensureDatabase(target, config.CLICKHOUSE_DATABASE, config.CLICKHOUSE_CLUSTER);
  const store = new ClickHouseStore(target, config.CLICKHOUSE_DATABASE, { cluster: config.CLICKHOUSE_CLUSTER, alterCluster: config.CLICKHOUSE_ALTER_CLUSTER });
  const applied = await migrate(store, MIGRATIONS);
  if (applied.length > 0) log.info({ applied }, "schema migrations applied");
  return { store, local };
}

export function resolveKeys(config: Config, log: Logger): { ring: KeyRing; printed: string | null } {
  if (config.AUTH_KEYS) return { ring: new KeyRing(config.AUTH_KEYS), printed: null };
  const { keys, created } = localKeys(resolve(config.DATA_DIR));
  const key = keys[0]!.key;
  if (created) log.warn("AUTH_KEYS is not set: generated a local API key (stored under DATA_DIR)");
  return { ring: new KeyRing(keys), printed: key };
}

/** The call events' lag bound, on the log or Kafka (the jobs topic has none: its writes are single job submissions). */
const lagLimits = (config: Config): LagLimits => ({ maxLagMs: config.MAX_LAG_MS, bulkItems: config.LAG_BULK_ITEMS, bulkBytes: config.LAG_BULK_BYTES });

const consumerOptions = (config: Config, log: Logger): ConsumerOptions => ({ maxWaitMs: config.BATCH_MAX_WAIT_MS, maxBatchEvents: config.BATCH_MAX_EVENTS, maxBatchBytes: config.BATCH_MAX_BYTES, log });

/**
 * The queue between ingest and worker in one process: the durable log under DATA_DIR (this
 * process's own directory; process 0 first takes over the logs of processes beyond PROCESSES).
 */
async function openEmbeddedQueue<T>(config: Config, topic: Topic<T>, log: Logger, lag?: LagLimits): Promise<DurableLogQueue<T>> {
  const limits = { maxPendingEvents: config.QUEUE_MAX_PENDING_EVENTS, maxPendingBytes: config.QUEUE_MAX_PENDING_BYTES };
  const dataDir = resolve(config.DATA_DIR);
  const queue = await DurableLogQueue.open(topic, {
    ...limits,
    dir: processLogDir(dataDir, topic.name, config.PROCESS_INDEX),
    maxLogBytes: config.LOG_MAX_BYTES,
    lag,
    maxBatchEvents: config.BATCH_MAX_EVENTS,
    maxBatchBytes: config.BATCH_MAX_BYTES,
    maxWaitMs: config.BATCH_MAX_WAIT_MS,
    batchesInFlight: config.LOG_BATCHES_IN_FLIGHT,
    log,
  });
  if (config.PROCESS_INDEX === 0) {
    for (const dir of await logDirsBeyond(dataDir, topic.name, config.PROCESSES)) {
      log.info({ dir, records: await queue.adopt(dir) }, "took over the log of a process no longer run");
    }
  }
  return queue;
}

const SHUTDOWN_GRACE_MS = 15_000;
/**
 * Longest an operation on a project waits for that project's queued writes to be stored
 * before it runs anyway (on what is stored): a worker far behind, or a store that is down,
 * must not hold reads for long.
 */
const READ_YOUR_WRITES_WAIT_MS = 5_000;

/** An operation on projects first waits for their queued writes (http/app.ts `queuedWritesStored`). */
function readYourWrites(waits: ReadYourWrites, log: Logger) {
  return (projects: readonly string[]) =>
    waits.stored(READ_YOUR_WRITES_WAIT_MS, projects).catch((err: unknown) => {
      log.warn({ err: errorText(err), projects }, "queued writes not stored in time: answering from what is stored");
    });
}
/** The log consumer thread's module, beside this one (run through tsx as this one is). */
const LOG_WORKER = moduleBeside(import.meta.url, "./worker/logWorker");

/**
 * Stops intake: no new connections; kept-alive connections are closed as soon as their
 * in-flight request is answered; after the grace period the rest are cut.
 */
async function closeServer(server: Server): Promise<void> {
  const closing = new Promise<void>((done) => server.close(() => done()));
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  const cut = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
  server.closeIdleConnections();
  await closing;
  clearInterval(sweep);
  clearTimeout(cut);
}

/** Wires the roles this process runs (services/resources.ts). Each dependency is made here and passed down. */
export async function startService(config: Config, log: Logger, deps: ServiceDependencies = {}): Promise<RunningService> {
  const roles = rolesOf(config.ROLE);
  setUpMetrics(config.ROLE, { processMetrics: true });
  const useKafka = !!config.KAFKA_BROKERS && config.KAFKA_BROKERS.length > 0;
  // Inference records each completion as a call: it publishes call events as ingest does.
  const publishesCalls = roles.has("ingest") || roles.has("inference");
  if (publishesCalls !== roles.has("worker") && !useKafka) {
    throw new Error(`ROLE=${config.ROLE} needs KAFKA_BROKERS: separate ingest (or inference) and worker roles talk through Kafka`);
  }
  const limits = { maxPendingEvents: config.QUEUE_MAX_PENDING_EVENTS, maxPendingBytes: config.QUEUE_MAX_PENDING_BYTES };
  const eventsTopic = traceEventsTopic(config.KAFKA_TOPIC);
  // Before the store: a log directory in use by another process stops the start at once.
  const embedded = useKafka ? null : await openEmbeddedQueue(config, eventsTopic, log, lagLimits(config));
  // The jobs topic (worker/jobs/runner.ts): embedded, it lives in the process that runs the jobs.
  const jobsTopicOf = jobsTopic(config.KAFKA_JOBS_TOPIC);
  const embeddedJobs = useKafka || !roles.has("worker") ? null : await openEmbeddedQueue(config, jobsTopicOf, log).catch(async (err: unknown) => {
    await embedded?.close();
    throw err;
  });
  const { store, local } = await openStore(config, log, deps).catch(async (err: unknown) => {
    await embedded?.close();
    await embeddedJobs?.close();
    throw err;
  });

  // The log's consumer runs in a thread of its own, with a store client of its own: an injected
  // ClickHouse (a test engine in this process) cannot be reached from there, so it is consumed here.
  const consumesInLogThread = embedded !== null && !deps.clickhouse;
  const publisher: EventPublisher<TraceEvent> | null = publishesCalls ? (embedded ?? new KafkaEventPublisher(eventsTopic, kafkaSettings(config, log), limits, lagLimits(config))) : null;
  const jobs = new JobsRepository(store);
  const jobPublisher: EventPublisher<JobMessage> | null = !roles.has("query") ? null : useKafka ? new KafkaEventPublisher(jobsTopicOf, kafkaSettings(config, log), limits) : embeddedJobs;
  let runner: JobRunner | null = null;
  const jobsHealthy = async () => (jobPublisher ? jobPublisher.healthy() : true) && (!roles.has("worker") || runner !== null);
  // One per process: chat completions, evaluation jobs and training share its threads (started at their first work).
  const modelThreads = new ModelThreads({ count: config.MODEL_THREADS, cacheBytes: config.INFERENCE_MODEL_CACHE_BYTES, log });
  const { ring, printed } = resolveKeys(config, log);
  const retention = new ProjectRetention(new ProjectSettingsRepository(store), config.RETENTION_DAYS ?? null);
  // One job per machine's processes (PROCESSES > 1 run copies of the worker): its deletes are the same for all.
  const retentionJob = roles.has("worker") && config.PROCESS_INDEX === 0 ? new RetentionJob(new RetentionExpiry(store), retention, jobs, { intervalMs: config.RETENTION_INTERVAL_MS, log }) : null;
  const parts: ServiceParts = {
    config,
    log,
    store,
    publisher,
    jobSubmitter: jobPublisher ? new JobSubmitter(jobPublisher, jobs, log) : null,
    jobsHealthy,
    modelThreads,
    keys: ring,
    retention,
    retentionChanged: () => retentionJob?.runSoon(),
  };
  let consumer: EventConsumer<TraceEvent> | null = null;
  if (roles.has("worker")) {
    consumer = embedded ?? new KafkaEventConsumer(eventsTopic, kafkaSettings(config, log), consumerOptions(config, log));
    if (!consumesInLogThread) await consumer.start(measuredDelivery(eventsTopic.name, callBatchHandler(parts), log));
  }
  let jobConsumer: EventConsumer<JobMessage> | null = null;
  const tasks: WorkerTask[] = [];
  if (roles.has("worker")) {
    const jobRunner = new JobRunner(jobs, { concurrency: config.JOBS_CONCURRENCY, maxAttempts: config.JOBS_MAX_ATTEMPTS, leaseMs: config.JOBS_LEASE_MS, log });
    for (const [type, handler] of Object.entries(jobHandlers(parts))) jobRunner.register(type, handler);
    jobConsumer = embeddedJobs ?? new KafkaEventConsumer(jobsTopicOf, { ...kafkaSettings(config, log), groupId: `${config.KAFKA_GROUP_ID}.jobs` }, consumerOptions(config, log));
    await jobConsumer.start(measuredDelivery(jobsTopicOf.name, jobIntake(jobs, () => jobRunner.wake()), log));
    jobRunner.start();
    runner = jobRunner;
    retentionJob?.start();
    // One set per machine's processes, as the retention job; several machines' workers agree through the store (resources.ts).
    if (config.PROCESS_INDEX === 0) tasks.push(...workerTasks(parts));
    for (const task of tasks) task.start();
  }

  let server: Server | null = null;
  let url: string | null = null;
  // Read-your-writes (queue/queue.ts `ReadYourWrites`): with Kafka any process can tell; the log, where it is written.
  const kafkaStored = useKafka ? new KafkaStoredOffsets(eventsTopic.name, kafkaSettings(config, log)) : null;
  const storedWaits: ReadYourWrites | null = kafkaStored ?? (publishesCalls ? embedded : null);
  let api: HttpApi | null = null;
  const servesApi = roles.has("ingest") || roles.has("query") || roles.has("inference");
  // The keys made over the API, read before the first request and kept in step with the other processes.
  const keySync = servesApi ? new KeySync(ring, new KeysRepository(store), log) : null;
  await keySync?.start();
  // A worker-only process answers only /health and /metrics, and only where METRICS_PORT asks it to.
  const port = servesApi ? config.PORT : config.METRICS_PORT;
  if (port !== undefined) {
    const http = new HttpApi({
      keys: ring,
      log,
      maxBodyBytes: config.MAX_BODY_BYTES,
      maxJsonDepth: config.JSON_MAX_DEPTH,
      recordedAnswers: new RetriesRepository(store),
      ...(storedWaits ? { queuedWritesStored: readYourWrites(storedWaits, log) } : {}),
    });
    api = http;
    mountServiceRoutes(api, { clickhouse: () => store.ping(), queue: () => (publisher ? publisher.healthy() : Promise.resolve(true)), ...(storedWaits ? { queueStored: (timeoutMs: number) => storedWaits.stored(timeoutMs) } : {}) }, config.TRUSTED_PROXIES);
    if (servesApi) mountRoutes(api, roles, parts);
    mountDocs(api);
    server = await http.listen(port, config.HOST);
    server.keepAliveTimeout = 65_000;
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : port}`;
    log.info({ url, role: config.ROLE, queue: useKafka ? "kafka" : "log" }, "listening");
  }
  // OTLP over gRPC, beside the HTTP API in the processes that run ingest (ingest/otlp/grpc.ts).
  let grpc: OtlpGrpcServer | null = null;
  if (roles.has("ingest") && publisher && config.OTLP_GRPC_PORT !== 0) {
    grpc = await startOtlpGrpc({ publisher, keys: ring, log, limits: otlpLimits(config), host: config.HOST, port: config.OTLP_GRPC_PORT, shutdownGraceMs: SHUTDOWN_GRACE_MS });
    log.info({ port: grpc.port }, "serving OTLP/gRPC");
  }
  // Once listening, so that loading the thread's modules does not delay the first answers; meanwhile the log keeps what is acknowledged.
  if (roles.has("worker") && consumesInLogThread) embedded.startThread(LOG_WORKER, { config, clickhouseUrl: store.url } satisfies LogWorkerData);

  return {
    url,
    otlpGrpcUrl: grpc ? `http://127.0.0.1:${grpc.port}` : null,
    clickhouseUrl: store.url,
    apiKey: printed,
    operations: api ? [...api.operations] : [],
    stop: async () => {
      // Intake stops on both doors at once; each lets what it accepted be answered.
      const grpcStopped = grpc?.stop();
      if (server && api) {
        api.beginDrain();
        await closeServer(server);
        api.runStopHooks();
      }
      await grpcStopped;
      await keySync?.stop();
      await Promise.all(tasks.map((task) => task.stop()));
      if (runner) await runner.stop();
      await retentionJob?.stop();
      // No request and no job asks for a model any more.
      await modelThreads.stop();
      if (jobConsumer) await jobConsumer.shutdown();
      if (jobPublisher && jobPublisher !== embeddedJobs) await jobPublisher.close();
      if (publisher && publisher !== embedded) await publisher.close();
      if (consumer) await consumer.shutdown();
      await kafkaStored?.close();
      await store.close();
      if (local) await local.stop();
    },
  };
}
