import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, register } from "prom-client";

/**
 * The service's Prometheus metrics (served at `/metrics`). prom-client keeps one registry
 * per thread: a worker thread (the embedded log's consumer) sends its registry's values
 * when asked (`addMetricsSource`), and `/metrics` answers the sum of this thread's and
 * theirs. Every metric carries the process's `role` (`ROLE`) as a default label.
 */
export type MetricsSnapshot = Awaited<ReturnType<typeof register.getMetricsAsJSON>>;
type MetricsSource = () => Promise<MetricsSnapshot>;

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const httpRequests = new Counter({ name: "http_requests_total", help: "HTTP requests answered, by route (the operation's path), method and status", labelNames: ["route", "method", "status"] });
export const httpDuration = new Histogram({ name: "http_request_duration_seconds", help: "Time from a request's arrival to the end of its answer, by route and method", labelNames: ["route", "method"], buckets: SECONDS });
export const httpRejects = new Counter({
  name: "http_rejects_total",
  help: "Requests refused: 4xx answers (bad input, auth, 413, 429 backpressure) and 503 (store or queue unavailable, draining), by route and status",
  labelNames: ["route", "status"],
});
export const mcpToolCalls = new Counter({ name: "mcp_tool_calls_total", help: "MCP tool calls at /mcp whose arguments were valid, by tool and outcome (ok, or error: a project the key may not reach, an unknown id, storage unavailable...)", labelNames: ["tool", "outcome"] });
export const grpcRequests = new Counter({ name: "grpc_requests_total", help: "OTLP/gRPC calls answered, by method (its path) and gRPC status code (0 OK, 3 INVALID_ARGUMENT, 8 RESOURCE_EXHAUSTED, 14 UNAVAILABLE, 16 UNAUTHENTICATED...)", labelNames: ["method", "code"] });
export const grpcDuration = new Histogram({ name: "grpc_request_duration_seconds", help: "Time from an OTLP/gRPC call's message to its answer, by method", labelNames: ["method"], buckets: SECONDS });
export const batchEvents = new Histogram({ name: "worker_batch_events", help: "Messages per batch handed to the worker, by topic", labelNames: ["topic"], buckets: [1, 10, 50, 100, 500, 1_000, 2_500, 5_000, 10_000, 25_000] });
export const batchDuration = new Histogram({ name: "worker_batch_seconds", help: "Time the worker took to store one batch (merge, inserts, hooks), by topic", labelNames: ["topic"], buckets: SECONDS });
export const insertDuration = new Histogram({ name: "clickhouse_insert_seconds", help: "Duration of inserts into ClickHouse, by table", labelNames: ["table"], buckets: SECONDS });
export const rowsWritten = new Counter({ name: "clickhouse_rows_written_total", help: "Rows inserted into ClickHouse by the service's inserts, by table", labelNames: ["table"] });
export const fetchedBatches = new Counter({ name: "queue_fetched_batches_total", help: "Kafka: batches of one partition fetched by this consumer, by topic", labelNames: ["topic"] });
export const skippedMessages = new Counter({
  name: "queue_skipped_messages_total",
  help: "Kafka: records (offsets, each one or more packed messages) this consumer never read because the broker no longer held them (retention shorter than the group's lag): acknowledged writes lost, by topic and partition",
  labelNames: ["topic", "partition"],
});
export const consumerLag = new Gauge({
  name: "queue_consumer_lag_messages",
  help: "Kafka: messages of a partition not yet stored by this consumer, as of its last fetch (high watermark − committed offset), by topic and partition",
  labelNames: ["topic", "partition"],
});
export const monitorScoringBacklog = new Gauge({ name: "monitor_scoring_backlog", help: "Monitors: (monitor version, call) items waiting in this worker's bounded scoring queue" });
export const monitorScoringDropped = new Counter({ name: "monitor_scoring_dropped_total", help: "Monitors: items dropped unscored from the scoring queue because it was full (the oldest go first)" });
export const monitorScoringItems = new Counter({
  name: "monitor_scoring_items_total",
  help: "Monitors: items taken from the scoring queue, by outcome (scored: at least one score written; already: every score was there; failed: scoring failed, logged; none: no scorer of the monitor can run)",
  labelNames: ["outcome"],
});

const sources = new Set<MetricsSource>();

/** Adds another thread's metrics to `/metrics`; call the returned function to stop. */
export function addMetricsSource(source: MetricsSource): () => void {
  sources.add(source);
  return () => void sources.delete(source);
}

/**
 * Asks for another thread's metrics (a message carrying an id, answered with the same id);
 * what is not answered within `waitMs` counts as nothing (a thread busy with a long batch
 * answers late, a dead one never).
 */
export class ThreadMetricsRequests {
  private asked = 0;
  private readonly answers = new Map<number, (snapshot: MetricsSnapshot) => void>();

  constructor(private readonly waitMs: number) {}

  ask(post: (id: number) => void): Promise<MetricsSnapshot> {
    const id = ++this.asked;
    return new Promise<MetricsSnapshot>((resolve) => {
      const answer = (snapshot: MetricsSnapshot) => {
        clearTimeout(timer);
        this.answers.delete(id);
        resolve(snapshot);
      };
      const timer = setTimeout(() => answer([]), this.waitMs);
      this.answers.set(id, answer);
      post(id);
    });
  }

  answered(id: number, snapshot: MetricsSnapshot): void {
    this.answers.get(id)?.(snapshot);
  }
}

/** Every source's metrics; a source that fails or is gone counts for nothing. */
async function sourcesSnapshots(): Promise<MetricsSnapshot[]> {
  const others = await Promise.all([...sources].map((source) => source().catch(() => null)));
  return others.filter((s): s is MetricsSnapshot => s !== null);
}

/**
 * This thread's metrics, with its own sources' added (a thread that starts threads of its own
 * passes theirs on), as values another thread can add up (sent to `addMetricsSource`).
 */
export async function metricsSnapshot(): Promise<MetricsSnapshot> {
  const own = await register.getMetricsAsJSON();
  if (sources.size === 0) return own;
  return AggregatorRegistry.aggregate([own, ...(await sourcesSnapshots())]).getMetricsAsJSON();
}

let processMetrics = false;

/** Labels every metric of this thread with the roles it runs; in the main thread also collects process metrics (RSS, CPU, event loop). */
export function setUpMetrics(role: string, options: { processMetrics: boolean }): void {
  register.setDefaultLabels({ role });
  if (options.processMetrics && !processMetrics) {
    processMetrics = true;
    collectDefaultMetrics();
  }
}

/** The `/metrics` answer: this thread's metrics plus every source's, summed by name and labels. */
export async function metricsText(): Promise<{ contentType: string; text: string }> {
  if (sources.size === 0) return { contentType: register.contentType, text: await register.metrics() };
  const merged = AggregatorRegistry.aggregate([await register.getMetricsAsJSON(), ...(await sourcesSnapshots())]);
  return { contentType: merged.contentType, text: await merged.metrics() };
}

/** Times `run` into `histogram` (labels as given); also resolves or rejects as `run` does. */
export async function timed<R, L extends string>(histogram: Histogram<L>, labels: Partial<Record<L, string>>, run: () => Promise<R>): Promise<R> {
  const end = histogram.startTimer(labels);
  try {
    return await run();
  } finally {
    end();
  }
}
