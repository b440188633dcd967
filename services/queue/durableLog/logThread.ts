import { parentPort, Worker, workerData, type ResourceLimits } from "node:worker_threads";
import type { Logger } from "pino";
import { addMetricsSource, metricsSnapshot, ThreadMetricsRequests, type MetricsSnapshot } from "../../metrics.js";
import type { Deliver, Topic } from "../queue.js";
import { LogConsumer, type LogConsumerOptions } from "./logConsumer.js";
import { LogReader } from "./logReader.js";
import type { LoggedRecord } from "./recentRecords.js";

/**
 * The consumer of a durable log in a worker thread of its own, so that the thread that
 * answers requests only validates, appends and syncs. The publisher's side (LogThread)
 * tells the thread where each synced group ends (with the records' places and event
 * counts, not their messages); the thread (runLogThread) reads the records from the log
 * files, parses them, hands batches to its handler (made in the thread: its own store
 * client) and tells back the position stored, which the publisher's side commits. At
 * shutdown it drains for at most the time given and ends. A thread that dies is started
 * again from the committed position (records handled twice: the handler is idempotent).
 */

type ConsumerSettings = Omit<LogConsumerOptions, "log" | "dir">;

interface ThreadStart {
  /** The module the thread runs (it calls runLogThread); a .ts module is loaded through tsx. */
  readonly entry: string;
  readonly dir: string;
  readonly committed: number;
  readonly end: number;
  readonly settings: ConsumerSettings;
  /** What the entry module needs to make its handler (configuration, store address). */
  readonly data: unknown;
}

type Place = Pick<LoggedRecord<unknown>, "start" | "end" | "events" | "appendedAt">;

type ToThread =
  | { readonly type: "appended"; readonly records: readonly Place[]; readonly end: number }
  | { readonly type: "hurry"; readonly position: number }
  | { readonly type: "drain"; readonly ms: number }
  | { readonly type: "metrics"; readonly id: number };
type FromThread =
  | { readonly type: "stored"; readonly position: number }
  | { readonly type: "drained"; readonly position: number }
  | { readonly type: "metrics"; readonly id: number; readonly snapshot: MetricsSnapshot };

const BOOT = new URL("./threadBoot.mjs", import.meta.url);
/**
 * The V8 limits of the threads that consume the log. A small young generation (8 MB; V8's
 * default grows to 48 MB): a batch's events and rows outlive a scavenge anyway, so more of
 * the young generation only holds garbage longer: under the OTLP bench the service's peak RSS
 * falls well below what V8's defaults give, at the same throughput (docs/benchmarks.md, "Memory").
 */
const CONSUMER_THREAD_LIMITS: ResourceLimits = { maxYoungGenerationSizeMb: 8 };

/** A module beside `base` (an `import.meta.url`), with base's extension: TypeScript through tsx, or the compiled JavaScript. */
export function moduleBeside(base: string, name: string): URL {
  return new URL(`${name}${base.endsWith(".ts") ? ".ts" : ".js"}`, base);
}

/** A worker thread of the log's consumer: runs `entry` (through threadBoot.mjs) with `workerData`, under CONSUMER_THREAD_LIMITS. */
export function startConsumerThread(entry: URL, workerData: object): Worker {
  return new Worker(BOOT, { workerData: { ...workerData, entry: entry.href }, resourceLimits: CONSUMER_THREAD_LIMITS });
}
const RESTART_MS = 1_000;
/** How long past its drain time a thread may take to end before it is terminated. */
const END_GRACE_MS = 10_000;
/** How long `/metrics` waits for the thread's values (a thread busy with a long batch answers late). */
const METRICS_WAIT_MS = 2_000;

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The publisher's side: starts the thread, forwards the synced groups, commits what it stored. */
export class LogThread<T> {
  private worker: Worker | null = null;
  private exited: Promise<void> = Promise.resolve();
  private draining = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private readonly metricsRequests = new ThreadMetricsRequests(METRICS_WAIT_MS);
  private removeMetricsSource: (() => void) | null = null;

  constructor(
    private readonly start: () => Omit<ThreadStart, "entry" | "data">,
    private readonly entry: URL,
    private readonly data: unknown,
    private readonly commitStored: (position: number) => Promise<void>,
    private readonly log: Logger,
  ) {}

  run(): void {
    const worker = startConsumerThread(this.entry, { ...this.start(), data: this.data } satisfies Omit<ThreadStart, "entry">);
    this.worker = worker;
    worker.on("message", (message: FromThread) => {
      if (message.type === "stored") void this.commitStored(message.position).catch(() => {});
      else if (message.type === "metrics") this.metricsRequests.answered(message.id, message.snapshot);
    });
    this.removeMetricsSource ??= addMetricsSource(() => this.threadMetrics());
    worker.on("error", (err) => this.log.error({ err: errorText(err) }, "log consumer thread failed"));
    this.exited = new Promise<void>((resolve) =>
      worker.once("exit", (code) => {
        this.worker = null;
        resolve();
        if (this.draining) return;
        this.log.error({ code }, "log consumer thread ended: starting it again from the committed position");
        this.restartTimer = setTimeout(() => this.run(), RESTART_MS);
      }),
    );
  }

  appended(records: readonly LoggedRecord<T>[], end: number): void {
    const places = records.map(({ start, end, events, appendedAt }) => ({ start, end, events, appendedAt }));
    this.post({ type: "appended", records: places, end });
  }

  hurry(position: number): void {
    this.post({ type: "hurry", position });
  }

  async drain(ms: number): Promise<void> {
    this.draining = true;
    this.removeMetricsSource?.();
    this.removeMetricsSource = null;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (!worker) return;
    this.post({ type: "drain", ms });
    const cut = setTimeout(() => void worker.terminate(), ms + END_GRACE_MS);
    await this.exited;
    clearTimeout(cut);
  }

  /** The thread's metrics (its own prom-client registry), for `/metrics`; none while it is down or past the wait. */
  private threadMetrics(): Promise<MetricsSnapshot> {
    if (!this.worker) return Promise.resolve([]);
    return this.metricsRequests.ask((id) => this.post({ type: "metrics", id }));
  }

  private post(message: ToThread): void {
    this.worker?.postMessage(message);
  }
}

/** The thread's side: consumes the log named in workerData with `handler`; `close` runs once drained. */
export function runLogThread<T>(topic: Topic<T>, deliver: Deliver<T>, log: Logger, close: () => Promise<void>): void {
  const port = parentPort;
  if (!port) throw new Error("runLogThread runs in a worker thread");
  const start = workerData as ThreadStart;
  const reader = new LogReader(start.dir);
  const tell = (message: FromThread) => port.postMessage(message);
  const source = {
    read: (from: number, upTo: number, maxBytes: number) => reader.read(from, upTo, maxBytes),
    commit: async (position: number) => {
      tell({ type: "stored", position });
      await reader.release(position);
    },
  };
  const consumer = new LogConsumer(topic, source, { ...start.settings, dir: start.dir, log }, start);
  port.on("message", (message: ToThread) => {
    if (message.type === "appended") {
      consumer.appended(message.records.map((r) => ({ ...r, messages: null })), message.end);
      return;
    }
    if (message.type === "hurry") {
      consumer.hurry(message.position);
      return;
    }
    if (message.type === "metrics") {
      void metricsSnapshot().then((snapshot) => tell({ type: "metrics", id: message.id, snapshot }));
      return;
    }
    void consumer
      .drain(message.ms)
      .then((position) => tell({ type: "drained", position }))
      .finally(async () => {
        await reader.close().catch(() => {});
        await close().catch((err: unknown) => log.error({ err: errorText(err) }, "closing the log consumer thread's store failed"));
        port.close();
        // Whatever else would keep the thread alive (a client's sockets) does not.
        setTimeout(() => process.exit(0), 1_000).unref();
      });
  });
  consumer.start(deliver);
  log.debug({ dir: start.dir, committed: start.committed, end: start.end }, "log consumer thread running");
}

/** What the thread's entry module was given (LogThread's `data`). */
export const logThreadData = (): unknown => (workerData as ThreadStart).data;
