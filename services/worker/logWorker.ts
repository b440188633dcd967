import pino from "pino";
import type { Config } from "../config.js";
import { isOtlpExport, traceEventsTopic, type TraceEvent } from "../queue/events.js";
import { logThreadData, runLogThread } from "../queue/durableLog/consume/logThread.js";
import { moduleBeside } from "../supervisedThread.js";
import { ClickHouseStore } from "../store/clickhouse.js";
import { setUpMetrics } from "../metrics.js";
import { callBatchHandler } from "./callWorker.js";
import { measuredDelivery } from "./delivery.js";
import { writerThreads, withWriterThreads } from "./writerThreads.js";

/** What the service gives the log's consumer thread (service.ts). */
export interface LogWorkerData {
  readonly config: Config;
  /** The ClickHouse the service migrated (CLICKHOUSE_URL or its local server). */
  readonly clickhouseUrl: string;
}

/**
 * The worker thread of the embedded mode on the durable log: reads the log, stores the call
 * events (merge, RowBinary inserts, each resource's afterCallBatch) through a store client
 * of its own, and tells the service's thread what it stored (queue/durableLog/consume/logThread.ts).
 * Batches made only of OTLP exports go to its LOG_EXPORT_WRITERS writer threads
 * (exportWriter.ts, started at the first such batch): mapping spans and writing their rows is
 * the costliest work per event, and this thread's event loop stays free for the small writes
 * it stores ahead of a backlog.
 */
const { config, clickhouseUrl } = logThreadData() as LogWorkerData;
const log = pino({ level: config.LOG_LEVEL }).child({ thread: "log-consumer" });
const store = new ClickHouseStore(clickhouseUrl, config.CLICKHOUSE_DATABASE, { cluster: config.CLICKHOUSE_CLUSTER });
setUpMetrics(config.ROLE, { processMetrics: false });
const topic = traceEventsTopic(config.KAFKA_TOPIC);
const WRITER_ENTRY = moduleBeside(import.meta.url, "./exportWriter");
const writers = writerThreads<TraceEvent>(config.LOG_EXPORT_WRITERS, WRITER_ENTRY, { config, clickhouseUrl } satisfies LogWorkerData, log);
const onlyExports = (events: readonly TraceEvent[]) => events.every(isOtlpExport);
const handler = withWriterThreads(callBatchHandler({ store }), writers.threads, onlyExports);
runLogThread(topic, measuredDelivery(topic.name, handler, log), log, async () => {
  await writers.close();
  await store.close();
});
