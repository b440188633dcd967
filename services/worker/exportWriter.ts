import { setUpMetrics } from "../metrics.js";
import { ClickHouseStore } from "../store/clickhouse.js";
import { callBatchHandler } from "./callWorker.js";
import type { LogWorkerData } from "./logWorker.js";
import { runWriterThread, writerThreadData } from "./writerThreads.js";

/**
 * A writer thread of the log's consumer (writerThreads.ts): stores the batches of OTLP
 * exports it is handed as the consumer thread would, through a store client of its own.
 */
const { config, clickhouseUrl } = writerThreadData() as LogWorkerData;
const store = new ClickHouseStore(clickhouseUrl, config.CLICKHOUSE_DATABASE, { cluster: config.CLICKHOUSE_CLUSTER });
setUpMetrics(config.ROLE, { processMetrics: false });
runWriterThread(callBatchHandler({ store }));
