import type { Server } from "node:http";
import { resolve } from "node:path";
import type { Logger } from "pino";
import { KeyRing, localKeys } from "./auth/keys.js";
import { KeySync } from "./auth/keySync.js";
import { KeysRepository } from "./store/keys/keysRepository.js";
import { rolesOf, usesKafka, type Config, type RoleName } from "./config.js";
import { setUpMetrics } from "./metrics.js";
import type { Operation } from "./contract/operation.js";
import { HttpApi } from "./http/app.js";
import { mountDocs, mountServiceRoutes } from "./query/serviceRoutes.js";
import { traceEventsTopic, type TraceEvent } from "./queue/events.js";
import { jobsTopic, type JobMessage } from "./queue/jobs.js";
import { DurableLogQueue } from "./queue/durableLog/durableLogQueue.js";
import { logDirsBeyond, processLogDir } from "./queue/durableLog/storage/files.js";
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

/**
 * The call events' lag bound, on the log or Kafka (the jobs topic has none: its writes are
 * single job submissions). `MAX_LAG_MS` counts past the batching wait: a write may wait
 * `BATCH_MAX_WAIT_MS` for its batch by design, and that alone must not refuse bulk writes.
 */
const lagLimits = (config: Config): LagLimits => ({
  maxLagMs: config.MAX_LAG_MS === 0 ? 0 : config.MAX_LAG_MS + config.BATCH_MAX_WAIT_MS,
  bulkItems: config.LAG_BULK_ITEMS,
  bulkBytes: config.LAG_BULK_BYTES,
});

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

/** An operation on projects first waits for their queued writes (http/app.ts `queuedWritesStored`), at most `waitMs`. */
function readYourWrites(waits: ReadYourWrites, waitMs: number, log: Logger) {
  return (projects: readonly string[]) =>
    waits.stored(waitMs, projects).catch((err: unknown) => {
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

/**
 * A part of the service, started: what the parts after it use, and its own stop. startService
 * starts storage → queues → shared parts → worker → intake, and stops them in reverse.
 */
type Started<T> = T & { stop(): Promise<void> };

/** What every part reads: the configuration and what follows from it. */
interface Wiring {
  readonly config: Config;
  readonly log: Logger;
  readonly roles: ReadonlySet<RoleName>;
  readonly useKafka: boolean;
  /** Inference records each completion as a call: it publishes call events as ingest does. */
  readonly publishesCalls: boolean;
  readonly eventsTopic: Topic<TraceEvent>;
  /** The jobs topic (worker/jobs/runner.ts): embedded, it lives in the process that runs the jobs. */
  readonly jobsTopic: Topic<JobMessage>;
}

function wiringOf(config: Config, log: Logger): Wiring {
  const roles = rolesOf(config.ROLE);
  setUpMetrics(config.ROLE, { processMetrics: true });
  const useKafka = usesKafka(config);
  const publishesCalls = roles.has("ingest") || roles.has("inference");
  if (publishesCalls !== roles.has("worker") && !useKafka) {
    throw new Error(`ROLE=${config.ROLE} needs KAFKA_BROKERS: separate ingest (or inference) and worker roles talk through Kafka`);
  }
  return { config, log, roles, useKafka, publishesCalls, eventsTopic: traceEventsTopic(config.KAFKA_TOPIC), jobsTopic: jobsTopic(config.KAFKA_JOBS_TOPIC) };
}

interface Storage {
  /** The durable logs, without Kafka (closed by the consumers that read them: connectQueues). */
  readonly embedded: DurableLogQueue<TraceEvent> | null;
  readonly embeddedJobs: DurableLogQueue<JobMessage> | null;
  readonly store: ClickHouseStore;
}

/** The durable logs (without Kafka) and ClickHouse; stops by closing ClickHouse, then the local server. */
async function openStorage({ config, log, roles, useKafka, publishesCalls, eventsTopic, jobsTopic }: Wiring, deps: ServiceDependencies): Promise<Started<Storage>> {
  // Before the store: a log directory in use by another process stops the start at once. A
  // process that neither writes calls nor stores them (ROLE=query) opens no log: nothing would
  // close it, and its lock would keep the log's own process out.
  const embedded = useKafka || !(publishesCalls || roles.has("worker")) ? null : await openEmbeddedQueue(config, eventsTopic, log, lagLimits(config));
  const embeddedJobs = useKafka || !roles.has("worker") ? null : await openEmbeddedQueue(config, jobsTopic, log).catch(async (err: unknown) => {
    await embedded?.close();
    throw err;
  });
  const { store, local } = await openStore(config, log, deps).catch(async (err: unknown) => {
    await embedded?.close();
    await embeddedJobs?.close();
    throw err;
  });
  return {
    embedded,
    embeddedJobs,
    store,
    stop: async () => {
      await store.close();
      if (local) await local.stop();
    },
  };
}

interface Queues {
  readonly publisher: EventPublisher<TraceEvent> | null;
  readonly jobPublisher: EventPublisher<JobMessage> | null;
  /** The call events' consumer and the jobs' consumer, in a worker (started by startWorker). */
  readonly consumer: EventConsumer<TraceEvent> | null;
  readonly jobConsumer: EventConsumer<JobMessage> | null;
  /** The log when its consumer runs in a thread of its own (started before the service listens). */
  readonly logThread: DurableLogQueue<TraceEvent> | null;
  /** Read-your-writes (queue/queue.ts `ReadYourWrites`): with Kafka any process can tell; the log, where it is written. */
  readonly storedWaits: ReadYourWrites | null;
}

/**
 * The publishers and consumers of the two topics, on the durable logs or Kafka; stops by
 * shutting down the consumers and closing the publishers (a log is closed by its consumer).
 */
function connectQueues(wiring: Wiring, { embedded, embeddedJobs }: Storage, injectedStore: boolean): Started<Queues> {
  const { config, log, roles, useKafka, publishesCalls, eventsTopic, jobsTopic } = wiring;
  const limits = { maxPendingEvents: config.QUEUE_MAX_PENDING_EVENTS, maxPendingBytes: config.QUEUE_MAX_PENDING_BYTES };
  const publisher: EventPublisher<TraceEvent> | null = publishesCalls ? (embedded ?? new KafkaEventPublisher(eventsTopic, kafkaSettings(config, log), limits, lagLimits(config))) : null;
  const jobPublisher: EventPublisher<JobMessage> | null = !roles.has("query") ? null : useKafka ? new KafkaEventPublisher(jobsTopic, kafkaSettings(config, log), limits) : embeddedJobs;
  const worker = roles.has("worker");
  const consumer = !worker ? null : (embedded ?? new KafkaEventConsumer(eventsTopic, kafkaSettings(config, log), consumerOptions(config, log)));
  const jobConsumer = !worker ? null : (embeddedJobs ?? new KafkaEventConsumer(jobsTopic, { ...kafkaSettings(config, log), groupId: `${config.KAFKA_GROUP_ID}.jobs` }, consumerOptions(config, log)));
  // The log's consumer runs in a thread of its own, with a store client of its own: an injected
  // ClickHouse (a test engine in this process) cannot be reached from there, so it is consumed here.
  const logThread = worker && !injectedStore ? embedded : null;
  const kafkaStored = useKafka ? new KafkaStoredOffsets(eventsTopic.name, kafkaSettings(config, log)) : null;
  return {
    publisher,
    jobPublisher,
    consumer,
    jobConsumer,
    logThread,
    storedWaits: kafkaStored ?? (publishesCalls ? embedded : null),
    stop: async () => {
      if (jobConsumer) await jobConsumer.shutdown();
      if (jobPublisher && jobPublisher !== embeddedJobs) await jobPublisher.close();
      if (publisher && publisher !== embedded) await publisher.close();
      if (consumer) await consumer.shutdown();
      await kafkaStored?.close();
    },
  };
}

interface Shared {
  /** What the routes, job handlers and worker tasks are given (resources.ts). */
  readonly parts: ServiceParts;
  readonly jobs: JobsRepository;
  readonly retentionJob: RetentionJob | null;
  /** The API key generated for a local run, to print; null when AUTH_KEYS names the keys. */
  readonly printedKey: string | null;
}

/**
 * The parts the roles share (keys, retention, jobs, model threads); stops the model threads.
 * `jobsRunning`: whether the job runner runs, where this process should run one.
 */
function shareParts(wiring: Wiring, { store }: Storage, { publisher, jobPublisher }: Queues, jobsRunning: () => boolean): Started<Shared> {
  const { config, log, roles } = wiring;
  const jobs = new JobsRepository(store);
  const jobsHealthy = async () => (jobPublisher ? await jobPublisher.healthy() : true) && jobsRunning();
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
  // No request and no job asks for a model any more when this stops (after the worker and intake).
  return { parts, jobs, retentionJob, printedKey: printed, stop: () => modelThreads.stop() };
}

/**
 * A worker's consumption and periodic work: the call events (here, or in the log's thread
 * started before the service listens), the job runner, the retention job and the worker tasks. Stops
 * the tasks, the runner, then the retention job; the consumers stop with the queues. `runner`
 * is null in a process that runs no worker.
 */
async function startWorker(wiring: Wiring, queues: Queues, { parts, jobs, retentionJob }: Shared): Promise<Started<{ runner: JobRunner | null }>> {
  const { config, log, roles, eventsTopic, jobsTopic } = wiring;
  const { consumer, jobConsumer } = queues;
  if (!roles.has("worker") || !consumer || !jobConsumer) return { runner: null, stop: async () => {} };
  if (!queues.logThread) await consumer.start(measuredDelivery(eventsTopic.name, callBatchHandler(parts), log));
  const runner = new JobRunner(jobs, { concurrency: config.JOBS_CONCURRENCY, maxAttempts: config.JOBS_MAX_ATTEMPTS, leaseMs: config.JOBS_LEASE_MS, log });
  for (const [type, handler] of Object.entries(jobHandlers(parts))) runner.register(type, handler);
  await jobConsumer.start(measuredDelivery(jobsTopic.name, jobIntake(jobs, () => runner.wake()), log));
  runner.start();
  retentionJob?.start();
  // One set per machine's processes, as the retention job; several machines' workers agree through the store (resources.ts).
  const tasks: readonly WorkerTask[] = config.PROCESS_INDEX === 0 ? workerTasks(parts) : [];
  for (const task of tasks) task.start();
  return {
    runner,
    stop: async () => {
      await Promise.all(tasks.map((task) => task.stop()));
      await runner.stop();
      await retentionJob?.stop();
    },
  };
}

interface Intake {
  readonly url: string | null;
  readonly otlpGrpcUrl: string | null;
  /** Every operation the HTTP server mounted (empty for a worker-only process). */
  readonly operations: readonly Operation[];
}

/**
 * The doors: the HTTP API (or, in a worker-only process, /health and /metrics) and OTLP/gRPC,
 * with the keys kept in step. Stops intake on both doors at once, each letting what it
 * accepted be answered, then the key sync.
 */
async function startIntake(wiring: Wiring, { store }: Storage, { publisher, storedWaits }: Queues, { parts }: Shared): Promise<Started<Intake>> {
  const { config, log, roles } = wiring;
  const servesApi = roles.has("ingest") || roles.has("query") || roles.has("inference");
  // The keys made over the API, read before the first request and kept in step with the other processes.
  const keySync = servesApi ? new KeySync(parts.keys, new KeysRepository(store), log) : null;
  await keySync?.start();
  // A worker-only process answers only /health and /metrics, and only where METRICS_PORT asks it to.
  const port = servesApi ? config.PORT : config.METRICS_PORT;
  const http = port === undefined ? null : await listenHttp(wiring, port, servesApi, parts, storedWaits);
  // OTLP over gRPC, beside the HTTP API in the processes that run ingest (ingest/otlp/grpc.ts).
  let grpc: OtlpGrpcServer | null = null;
  const stop = async () => {
    const grpcStopped = grpc?.stop();
    if (http) {
      http.api.beginDrain();
      await closeServer(http.server);
      http.api.runStopHooks();
    }
    await grpcStopped;
    await keySync?.stop();
  };
  if (roles.has("ingest") && publisher && config.OTLP_GRPC_PORT !== 0) {
    try {
      grpc = await startOtlpGrpc({ publisher, keys: parts.keys, log, limits: otlpLimits(config), host: config.HOST, port: config.OTLP_GRPC_PORT, shutdownGraceMs: SHUTDOWN_GRACE_MS });
    } catch (err) {
      await stop();
      throw err;
    }
    log.info({ port: grpc.port }, "serving OTLP/gRPC");
  }
  return {
    url: http?.url ?? null,
    otlpGrpcUrl: grpc ? `http://127.0.0.1:${grpc.port}` : null,
    operations: http ? [...http.api.operations] : [],
    stop,
  };
}

/** The HTTP server on `port`: the service routes, the roles' routes where it serves the API, the documents. */
async function listenHttp(wiring: Wiring, port: number, servesApi: boolean, parts: ServiceParts, storedWaits: ReadYourWrites | null): Promise<{ api: HttpApi; server: Server; url: string }> {
  const { config, log, roles, useKafka } = wiring;
  const { store, publisher } = parts;
  const api = new HttpApi({
    keys: parts.keys,
    log,
    maxBodyBytes: config.MAX_BODY_BYTES,
    maxJsonDepth: config.JSON_MAX_DEPTH,
    recordedAnswers: new RetriesRepository(store),
    ...(storedWaits ? { queuedWritesStored: readYourWrites(storedWaits, config.READ_YOUR_WRITES_WAIT_MS, log) } : {}),
  });
  mountServiceRoutes(api, { clickhouse: () => store.ping(), queue: () => (publisher ? publisher.healthy() : Promise.resolve(true)), ...(storedWaits ? { queueStored: (timeoutMs: number) => storedWaits.stored(timeoutMs) } : {}) }, config.TRUSTED_PROXIES);
  if (servesApi) mountRoutes(api, roles, parts);
  mountDocs(api);
  const server = await api.listen(port, config.HOST);
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : port}`;
  log.info({ url, role: config.ROLE, queue: useKafka ? "kafka" : "log" }, "listening");
  return { api, server, url };
}

/** Wires the roles this process runs (services/resources.ts). Each dependency is made here and passed down. */
export async function startService(config: Config, log: Logger, deps: ServiceDependencies = {}): Promise<RunningService> {
  const wiring = wiringOf(config, log);
  const started: { stop(): Promise<void> }[] = [];
  const keep = <T extends { stop(): Promise<void> }>(part: T): T => (started.push(part), part);
  // Intake → worker → model threads → queues → ClickHouse.
  const stop = async () => {
    for (let i = started.length - 1; i >= 0; i--) await started[i]!.stop();
  };
  try {
    const storage = keep(await openStorage(wiring, deps));
    const queues = keep(connectQueues(wiring, storage, !!deps.clickhouse));
    let runner: JobRunner | null = null;
    const shared = keep(shareParts(wiring, storage, queues, () => !wiring.roles.has("worker") || runner !== null));
    const logThreadBooted = queues.logThread?.startThread(LOG_WORKER, { config, clickhouseUrl: storage.store.url } satisfies LogWorkerData);
    const worker = keep(await startWorker(wiring, queues, shared));
    runner = worker.runner;
    // Listening once the log's thread has loaded its modules (a second of a core): on a small
    // machine, loading it while answering made the first seconds' answers slow.
    await logThreadBooted;
    const intake = keep(await startIntake(wiring, storage, queues, shared));
    return { url: intake.url, otlpGrpcUrl: intake.otlpGrpcUrl, clickhouseUrl: storage.store.url, apiKey: shared.printedKey, operations: intake.operations, stop };
  } catch (err) {
    // A part that cannot start (a port taken, ClickHouse gone) leaves none of the others running in a process that lives on (a test's, an embedder's).
    await stop().catch((stopErr: unknown) => log.warn({ err: stopErr }, "stopping the parts started before a failed start"));
    throw err;
  }
}
