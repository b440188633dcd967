import { parentPort, Worker, workerData } from "node:worker_threads";
import type { Logger } from "pino";
import { RetryableError } from "../errors.js";
import { CONSUMER_THREAD_LIMITS } from "../queue/durableLog/logThread.js";
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
 */

type ToWriter = { readonly id: number; readonly messages: readonly unknown[] };
type FromWriter = { readonly id: number; readonly error?: { readonly message: string; readonly retryAfterSeconds: number | null } };

/** The first module of a worker thread (it loads the entry, through tsx for TypeScript). */
const BOOT = new URL("../queue/durableLog/threadBoot.mjs", import.meta.url);
const RESTART_MS = 1_000;
const MAX_RESTARTS = 3;

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class WriterThread<T> {
  private worker: Worker | null = null;
  private pending: { readonly id: number; readonly resolve: () => void; readonly reject: (err: Error) => void } | null = null;
  private nextId = 0;
  private closed = false;
  /** Ends since the last batch stored. */
  private failures = 0;

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
      worker.postMessage({ id, messages } satisfies ToWriter);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.worker?.terminate();
  }

  private run(): void {
    if (this.closed) return;
    const worker = new Worker(BOOT, { workerData: { entry: this.entry.href, data: this.data }, resourceLimits: CONSUMER_THREAD_LIMITS });
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
  return { threads, close: async () => void (await Promise.all(threads.map((t) => t.close()))) };
}

/** What the thread's entry module was given (`data` of startWriterThreads). */
export const writerThreadData = (): unknown => (workerData as { data: unknown }).data;

/** The thread's side: stores each batch it is given with `handler`, one at a time, and answers. */
export function runWriterThread<T>(handler: BatchHandler<T>): void {
  const port = parentPort;
  if (!port) throw new Error("runWriterThread runs in a worker thread");
  port.on("message", ({ id, messages }: ToWriter) => {
    handler(messages as readonly T[]).then(
      () => port.postMessage({ id } satisfies FromWriter),
      (err: unknown) => {
        const retryAfterSeconds = err instanceof RetryableError ? err.retryAfterSeconds : null;
        port.postMessage({ id, error: { message: errorText(err), retryAfterSeconds } } satisfies FromWriter);
      },
    );
  });
}
