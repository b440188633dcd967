import pino from "pino";
import type { Config } from "../config.js";
import { traceEventsTopic } from "../queue/events.js";
import { logThreadData, runLogThread } from "../queue/durableLog/logThread.js";
import { ClickHouseStore } from "../store/clickhouse.js";
import { setUpMetrics } from "../metrics.js";
import { measuredBatches } from "../queue/queue.js";
import { callBatchHandler } from "./callWorker.js";

/** What the service gives the log's consumer thread (service.ts). */
export interface LogWorkerData {
  readonly config: Config;
  /** The ClickHouse the service migrated (CLICKHOUSE_URL or its local server). */
  readonly clickhouseUrl: string;
}

/**
 * The worker thread of the embedded mode on the durable log: reads the log, stores the call
 * events (merge, RowBinary inserts, each resource's afterCallBatch) through a store client
 * of its own, and tells the service's thread what it stored (queue/durableLog/logThread.ts).
 */
const { config, clickhouseUrl } = logThreadData() as LogWorkerData;
const log = pino({ level: config.LOG_LEVEL }).child({ thread: "log-consumer" });
const store = new ClickHouseStore(clickhouseUrl, config.CLICKHOUSE_DATABASE, { cluster: config.CLICKHOUSE_CLUSTER });
setUpMetrics(config.ROLE, { processMetrics: false });
const topic = traceEventsTopic(config.KAFKA_TOPIC);
runLogThread(topic, measuredBatches(topic.name, callBatchHandler({ store })), log, () => store.close());
