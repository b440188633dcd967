import { workerData } from "node:worker_threads";
import type { Logger } from "pino";
import { RetryableError, errorText } from "../errors.js";
import type { BatchHandler } from "../queue/queue.js";
import type { MetricsSnapshot } from "../metrics.js";
import { serveThread, SupervisedThread } from "../supervisedThread.js";

/**
 * Worker threads that store batches for the log's consumer thread, so that batches are
 * stored on more than one core. A batch is handed over by structured clone, which is cheap
 * only for messages that are a few large strings: the consumer gives them batches of OTLP
 * exports (`withWriterThreads`), and keeps its own event loop free for the rest (small
 * batches, the writes it stores ahead of a backlog: queue/durableLog/admission/expressLane.ts). The
 * consumer thread still takes every batch in order and commits positions in order; a thread
 * only stores.
 *
 * A thread starts at the first batch that could go to it: a service sent no OTLP exports never
 * loads one, and until one has loaded its modules the consumer thread stores the batches itself.
 * Each is a SupervisedThread (supervisedThread.ts: restarts, metrics passed on to `/metrics`). A
 * thread that ends fails the batch it held with a RetryableError, and the consumer hands it
 * over again. It is started again at most MAX_RESTARTS times in a row with no batch stored
 * in between (a thread that cannot start, a batch that kills it): at the next end it stays
 * down, and the consumer thread stores every batch itself.
 */

type ToWriter = { readonly type: "store"; readonly id: number; readonly messages: readonly unknown[] };
type FromWriter = { readonly type: "stored"; readonly id: number; readonly error?: { readonly message: string; readonly retryAfterSeconds: number | null } };

/** Restarts in a row with no batch stored between them: a writer thread's next end (the fourth in a row) leaves it down. */
const MAX_RESTARTS = 3;


export class WriterThread<T> {
  private thread: SupervisedThread<ToWriter, FromWriter> | null = null;
  /** Its first start has loaded the thread's modules: batches may go to it. */
  private booted = false;
  private pending: { readonly id: number; readonly resolve: () => void; readonly reject: (err: Error) => void } | null = null;
  private nextId = 0;
  /** Resolves once the batch held last ends (stored or failed). */
  private lastWrite: Promise<void> = Promise.resolve();

  constructor(
    private readonly entry: URL,
    private readonly data: unknown,
    private readonly log: Logger,
  ) {}

  /**
   * Starts the thread, once: at the first batch it could take (withWriterThreads), so that a
   * service that is sent no OTLP exports never loads it (about a second of a core).
   */
  start(): void {
    if (this.thread) return;
    const { entry, data, log } = this;
    this.thread = new SupervisedThread<ToWriter, FromWriter>({
      entry,
      data: () => ({ data }),
      name: "writer",
      log,
      onMessage: (answer) => this.answered(answer),
      onEnded: (code) => this.settle(new RetryableError(`writer thread ended (${code})`)),
      maxRestarts: MAX_RESTARTS,
    });
    void this.thread.booted.then(() => (this.booted = true));
  }

  get idle(): boolean {
    return this.booted && this.thread?.running === true && this.pending === null;
  }

  get busy(): boolean {
    return this.pending !== null;
  }

  /** Resolves once the batch it holds ends (at once when it holds none). */
  settled(): Promise<void> {
    return this.lastWrite;
  }

  write(messages: readonly T[]): Promise<void> {
    const thread = this.thread;
    if (!this.booted || !thread?.running || this.pending) return Promise.reject(new RetryableError("writer thread busy, down or not started"));
    const id = ++this.nextId;
    const written = new Promise<void>((resolve, reject) => {
      this.pending = { id, resolve, reject };
      thread.post({ type: "store", id, messages });
    });
    this.lastWrite = written.then(
      () => {},
      () => {},
    );
    return written;
  }

  /** The thread's own metrics (also passed on to `/metrics`). */
  metrics(): Promise<MetricsSnapshot> {
    return this.thread?.metrics() ?? Promise.resolve([]);
  }

  async close(): Promise<void> {
    await this.thread?.stop();
    this.settle(new RetryableError("writer thread closed"));
  }

  private answered(answer: FromWriter): void {
    if (answer.id !== this.pending?.id) return;
    const { error } = answer;
    this.thread?.progressed();
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

/**
 * Batches that `handOver` accepts go to an idle writer thread, waiting for one while all are
 * busy; they are stored by `local` while none is idle or busy (all starting, or down). The
 * first such batch starts the threads. The rest are stored by `local`.
 */
export function withWriterThreads<T>(local: BatchHandler<T>, threads: readonly WriterThread<T>[], handOver: (messages: readonly T[]) => boolean): BatchHandler<T> {
  return async (messages) => {
    if (!handOver(messages)) return local(messages);
    for (const thread of threads) thread.start();
    for (;;) {
      const idle = threads.find((t) => t.idle);
      if (idle) return idle.write(messages);
      const busy = threads.filter((t) => t.busy);
      if (busy.length === 0) return local(messages);
      await Promise.race(busy.map((t) => t.settled()));
    }
  };
}

/** `count` writer threads running `entry` (a module that calls runWriterThread), each given `data`, each started at its first batch. */
export function writerThreads<T>(count: number, entry: URL, data: unknown, log: Logger): { threads: WriterThread<T>[]; close: () => Promise<void> } {
  const threads = Array.from({ length: count }, () => new WriterThread<T>(entry, data, log));
  return { threads, close: async () => void (await Promise.all(threads.map((t) => t.close()))) };
}

/** What the thread's entry module was given (`data` of startWriterThreads). */
export const writerThreadData = (): unknown => (workerData as { data: unknown }).data;

/** The thread's side: stores each batch it is given with `handler`, one at a time, and answers. */
export function runWriterThread<T>(handler: BatchHandler<T>): void {
  const { tell } = serveThread<ToWriter, FromWriter>(({ id, messages }) => {
    handler(messages as readonly T[]).then(
      () => tell({ type: "stored", id }),
      (err: unknown) => {
        const retryAfterSeconds = err instanceof RetryableError ? err.retryAfterSeconds : null;
        tell({ type: "stored", id, error: { message: errorText(err), retryAfterSeconds } });
      },
    );
  });
}
