import { parentPort, workerData, type Worker } from "node:worker_threads";
import type { Logger } from "pino";
import { RetryableError } from "../errors.js";
import { startConsumerThread } from "../queue/durableLog/logThread.js";
import { addMetricsSource, metricsSnapshot, ThreadMetricsRequests, type MetricsSnapshot } from "../metrics.js";
import type { BatchHandler } from "../queue/queue.js";

/**
 * Worker threads that store batches for the log's consumer thread, so that batches are
 * stored on more than one core. A batch is handed over by structured clone, which is cheap
 * only for messages that are a few large strings: the consumer gives them batches of OTLP
 * exports (`withWriterThreads`). The consumer thread still takes every batch in order and
 * commits positions in order; a thread only stores.
 *
 * A thread that ends is started again after RESTART_MS; the batch it held is answered with
 * a RetryableError, and the consumer hands it over again. After MAX_RESTARTS ends in a row
 * with no batch stored in between (a thread that cannot start, a batch that kills it), it
 * stays down, and the consumer thread stores every batch itself.
 *
 * Each thread's metrics (its own prom-client registry: its ClickHouse queries and rows) are
 * a metrics source of the consumer thread, which passes them on to `/metrics`.
 */

type ToWriter = { readonly type: "store"; readonly id: number; readonly messages: readonly unknown[] } | { readonly type: "metrics"; readonly id: number };
type FromWriter =
  | { readonly type: "stored"; readonly id: number; readonly error?: { readonly message: string; readonly retryAfterSeconds: number | null } }
  | { readonly type: "metrics"; readonly id: number; readonly snapshot: MetricsSnapshot };

const RESTART_MS = 1_000;
const MAX_RESTARTS = 3;
/** How long the metrics of a thread are waited for (a thread busy with a batch answers between its awaits). */
const METRICS_WAIT_MS = 2_000;

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class WriterThread<T> {
  private worker: Worker | null = null;
  private pending: { readonly id: number; readonly resolve: () => void; readonly reject: (err: Error) => void } | null = null;
  private nextId = 0;
  private closed = false;
  /** Ends since the last batch stored. */
  private failures = 0;
  private readonly metricsRequests = new ThreadMetricsRequests(METRICS_WAIT_MS);

  constructor(
    private readonly entry: URL,
    private readonly data: unknown,
    private readonly log: Logger,
  ) {
    this.run();
  }

  get idle(): boolean {
    return this.worker !== null && this.pending === null;
  }

  write(messages: readonly T[]): Promise<void> {
    const worker = this.worker;
    if (!worker || this.pending) return Promise.reject(new RetryableError("writer thread busy or down"));
    const id = ++this.nextId;
    return new Promise<void>((resolve, reject) => {
      this.pending = { id, resolve, reject };
      worker.postMessage({ type: "store", id, messages } satisfies ToWriter);
    });
  }

  /** The thread's metrics; none while it is down or past METRICS_WAIT_MS. */
  metrics(): Promise<MetricsSnapshot> {
    const worker = this.worker;
    if (!worker) return Promise.resolve([]);
    return this.metricsRequests.ask((id) => worker.postMessage({ type: "metrics", id } satisfies ToWriter));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.worker?.terminate();
  }

  private run(): void {
    if (this.closed) return;
    const worker = startConsumerThread(this.entry, { data: this.data });
    this.worker = worker;
    worker.on("message", (answer: FromWriter) => this.answered(answer));
    worker.on("error", (err) => this.log.error({ err: errorText(err) }, "writer thread failed"));
    worker.once("exit", (code) => {
      this.worker = null;
      this.settle(new RetryableError(`writer thread ended (${code})`));
      if (this.closed) return;
      if (++this.failures > MAX_RESTARTS) {
        this.log.error({ code }, "writer thread ended again without storing a batch: not started again, the log's worker thread stores every batch");
        return;
      }
      this.log.error({ code }, "writer thread ended: starting it again");
      setTimeout(() => this.run(), RESTART_MS).unref();
    });
  }

  private answered(answer: FromWriter): void {
    if (answer.type === "metrics") return this.metricsRequests.answered(answer.id, answer.snapshot);
    if (answer.id !== this.pending?.id) return;
    const { error } = answer;
    this.failures = 0;
    if (!error) return this.settle(null);
    this.settle(error.retryAfterSeconds === null ? new Error(error.message) : new RetryableError(error.message, error.retryAfterSeconds));
  }

  private settle(err: Error | null): void {
    const pending = this.pending;
    this.pending = null;
    if (!pending) return;
    if (err) pending.reject(err);
    else pending.resolve();
  }
}

/** Batches that `handOver` accepts go to an idle writer thread, when there is one; the rest are stored by `local`. */
export function withWriterThreads<T>(local: BatchHandler<T>, threads: readonly WriterThread<T>[], handOver: (messages: readonly T[]) => boolean): BatchHandler<T> {
  return (messages) => {
    const idle = threads.find((t) => t.idle);
    return idle && handOver(messages) ? idle.write(messages) : local(messages);
  };
}

/** Starts `count` writer threads running `entry` (a module that calls runWriterThread), each given `data`. */
export function startWriterThreads<T>(count: number, entry: URL, data: unknown, log: Logger): { threads: WriterThread<T>[]; close: () => Promise<void> } {
  const threads = Array.from({ length: count }, () => new WriterThread<T>(entry, data, log));
  const removeSources = threads.map((t) => addMetricsSource(() => t.metrics()));
  const close = async () => {
    for (const remove of removeSources) remove();
    await Promise.all(threads.map((t) => t.close()));
  };
  return { threads, close };
}

/** What the thread's entry module was given (`data` of startWriterThreads). */
export const writerThreadData = (): unknown => (workerData as { data: unknown }).data;

/** The thread's side: stores each batch it is given with `handler`, one at a time, and answers. */
export function runWriterThread<T>(handler: BatchHandler<T>): void {
  const port = parentPort;
  if (!port) throw new Error("runWriterThread runs in a worker thread");
  const tell = (message: FromWriter) => port.postMessage(message);
  port.on("message", (message: ToWriter) => {
    const { id } = message;
    if (message.type === "metrics") {
      void metricsSnapshot().then((snapshot) => tell({ type: "metrics", id, snapshot }));
      return;
    }
    handler(message.messages as readonly T[]).then(
      () => tell({ type: "stored", id }),
      (err: unknown) => {
        const retryAfterSeconds = err instanceof RetryableError ? err.retryAfterSeconds : null;
        tell({ type: "stored", id, error: { message: errorText(err), retryAfterSeconds } });
      },
    );
  });
}
