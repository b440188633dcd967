import type { Server } from "node:http";
import { resolve } from "node:path";
import type { Logger } from "pino";
import { KeyRing, localKeys } from "./auth/keys.js";
import type { Config } from "./config.js";
import { HttpApi } from "./http/app.js";
import { mountCallIngest } from "./ingest/callsRoutes.js";
import { mountOtlpIngest } from "./ingest/otlp/routes.js";
import { mountCallQueries } from "./query/callsRoutes.js";
import { costsEnricher, mountCostRoutes } from "./query/costsRoutes.js";
import { feedbackEnricher, mountFeedbackRoutes } from "./query/feedbackRoutes.js";
import { mountThreadQueries } from "./query/threadsRoutes.js";
import { mountUsageRoutes } from "./query/usageRoutes.js";
import { ThreadAggregatesWriter } from "./worker/threadAggregates.js";
import { mountDocs, mountServiceRoutes } from "./query/serviceRoutes.js";
import { traceEventsTopic, type TraceEvent } from "./queue/events.js";
import { InProcessQueue } from "./queue/inProcessQueue.js";
import { KafkaEventConsumer, KafkaEventPublisher, type KafkaSettings } from "./queue/kafkaQueue.js";
import type { EventConsumer, EventPublisher } from "./queue/queue.js";
import { CallsReadRepository } from "./store/calls/callsRead.js";
import { CallsWriteRepository } from "./store/calls/callsWrite.js";
import { ClickHouseStore } from "./store/clickhouse.js";
import { startLocalClickHouse, type LocalClickHouse } from "./store/localServer.js";
import { ensureDatabase, migrate } from "./store/migrations.js";
import { CallBatchWriter } from "./worker/callBatchWriter.js";

export interface RunningService {
  readonly url: string | null;
  readonly clickhouseUrl: string;
  readonly apiKey: string | null;
  /** Stop intake → drain the queue and buffers → commit → close clients. */
  stop(): Promise<void>;
}

const hasHttp = (role: Config["ROLE"]) => role !== "worker";

function kafkaSettings(config: Config): KafkaSettings {
  return { brokers: config.KAFKA_BROKERS ?? [], groupId: config.KAFKA_GROUP_ID, clientId: `tracehouse-${config.ROLE}` };
}

/**
 * The ClickHouse this service uses, migrated: CLICKHOUSE_URL, or a private server started
 * under DATA_DIR (then `local` is it, to stop last).
 */
export async function openStore(config: Config, log: Logger): Promise<{ store: ClickHouseStore; local: LocalClickHouse | null }> {
  let url = config.CLICKHOUSE_URL;
  let local: LocalClickHouse | null = null;
  if (!url) {
    local = await startLocalClickHouse(resolve(config.DATA_DIR));
    url = local.url;
    log.info({ url }, "started local ClickHouse");
  }
  await ensureDatabase(url, config.CLICKHOUSE_DATABASE);
  const store = new ClickHouseStore(url, config.CLICKHOUSE_DATABASE);
  const applied = await migrate(store);
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

const SHUTDOWN_GRACE_MS = 15_000;

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

/** Wires the roles this process runs. Each dependency is made here and passed down. */
export async function startService(config: Config, log: Logger): Promise<RunningService> {
  if ((config.ROLE === "ingest" || config.ROLE === "worker") && !config.KAFKA_BROKERS) {
    throw new Error(`ROLE=${config.ROLE} needs KAFKA_BROKERS: separate roles talk through Kafka`);
  }
  const { store, local } = await openStore(config, log);
  const useKafka = !!config.KAFKA_BROKERS && config.KAFKA_BROKERS.length > 0;
  const limits = { maxPendingEvents: config.QUEUE_MAX_PENDING_EVENTS, maxPendingBytes: config.QUEUE_MAX_PENDING_BYTES };
  const eventsTopic = traceEventsTopic(config.KAFKA_TOPIC);
  const embedded = useKafka ? null : new InProcessQueue(eventsTopic, { ...limits, maxBatchEvents: config.BATCH_MAX_EVENTS, lanes: config.WORKER_LANES });

  const runsIngest = config.ROLE === "all" || config.ROLE === "ingest";
  const runsWorker = config.ROLE === "all" || config.ROLE === "worker";
  const runsQuery = config.ROLE === "all" || config.ROLE === "query";

  const publisher: EventPublisher<TraceEvent> | null = runsIngest ? (embedded ?? new KafkaEventPublisher(eventsTopic, kafkaSettings(config), limits)) : null;
  let consumer: EventConsumer<TraceEvent> | null = null;
  if (runsWorker) {
    consumer = embedded ?? new KafkaEventConsumer(eventsTopic, kafkaSettings(config), { maxWaitMs: config.BATCH_MAX_WAIT_MS, maxBatchEvents: config.BATCH_MAX_EVENTS, log });
    const writer = new CallBatchWriter(new CallsWriteRepository(store), [new ThreadAggregatesWriter(store)]);
    await consumer.start((events) => writer.write(events));
  }

  let server: Server | null = null;
  let url: string | null = null;
  const { ring, printed } = resolveKeys(config, log);
  let api: HttpApi | null = null;
  if (hasHttp(config.ROLE)) {
    const http = new HttpApi({ keys: ring, log, maxBodyBytes: config.MAX_BODY_BYTES });
    api = http;
    const reads = new CallsReadRepository(store);
    mountServiceRoutes(api, { clickhouse: () => store.ping(), queue: () => (publisher ? publisher.healthy() : Promise.resolve(true)) }, config.TRUSTED_PROXIES);
    if (publisher) mountCallIngest(api, publisher, reads);
    if (publisher) mountOtlpIngest(api, publisher, { maxBodyBytes: config.OTLP_MAX_BODY_BYTES, maxSpanBytes: config.OTLP_MAX_SPAN_BYTES });
    if (runsQuery) {
      mountCallQueries(api, { reads, enrichers: { include_costs: costsEnricher(store), include_feedback: feedbackEnricher(store) } });
      mountThreadQueries(api, { store });
      mountCostRoutes(api, { store });
      mountFeedbackRoutes(api, { store });
      mountUsageRoutes(api, { store });
    }
    mountDocs(api);
    api.installErrorHandler();
    server = await new Promise<Server>((done) => {
      const s = http.app.listen(config.PORT, config.HOST, () => done(s));
    });
    server.keepAliveTimeout = 65_000;
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : config.PORT;
    url = `http://127.0.0.1:${port}`;
    log.info({ url, role: config.ROLE, queue: useKafka ? "kafka" : "in-process" }, "listening");
  }

  return {
    url,
    clickhouseUrl: store.url,
    apiKey: printed,
    stop: async () => {
      if (server && api) {
        api.beginDrain();
        await closeServer(server);
      }
      if (publisher && publisher !== embedded) await publisher.close();
      if (consumer) await consumer.shutdown();
      await store.close();
      if (local) await local.stop();
    },
  };
}
