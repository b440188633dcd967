import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { parentPort, Worker, type ResourceLimits, type Transferable } from "node:worker_threads";
import type { Logger } from "pino";
import { addMetricsSource, metricsSnapshot, ThreadMetricsRequests, type MetricsSnapshot } from "./metrics.js";
import { errorText } from "./errors.js";

/**
 * The one way a stage runs in a worker thread of its own (the log's consumer, the OTLP writer
 * threads): started under THREAD_LIMITS through threadBoot.mjs, started again when it ends
 * unasked, and its metrics (its own prom-client registry) passed on to `/metrics` through
 * this thread's metrics sources. Messages both ways are objects with a `type`; `metrics` is
 * this module's own (`serveThread` answers it on the thread's side).
 */

const BOOT = new URL("./threadBoot.mjs", import.meta.url);
/**
 * A small young generation (V8's default grows to 48 MB): a batch's events and rows outlive a
 * scavenge anyway, so more of it only holds garbage longer; the service's peak RSS under the
 * OTLP bench rises well past 512 MB with V8's default (docs/benchmarks.md), for the same throughput.
 */
const THREAD_LIMITS: ResourceLimits = { maxYoungGenerationSizeMb: 8 };
const RESTART_MS = 1_000;
/** How long `/metrics` waits for a thread's values (a thread busy with a long batch answers late). */
const METRICS_WAIT_MS = 2_000;

interface Typed {
  readonly type: string;
}
type MetricsAsk = { readonly type: "metrics"; readonly id: number };
type MetricsAnswer = { readonly type: "metrics"; readonly id: number; readonly snapshot: MetricsSnapshot };
/** Sent by threadBoot.mjs once the thread's entry module has run. */
type Booted = { readonly type: "booted" };


/**
 * Lowers the scheduling priority of the calling thread alone by `by` nice levels (Linux: setpriority on its own
 * thread id, read from /proc/thread-self), so that when the cores are contended the threads
 * that answer requests and store writes run first. Elsewhere, or when refused, nothing changes.
 */
export function lowerThreadPriority(by: number): void {
  try {
    const tid = Number(/task\/(\d+)$/.exec(readlinkSync("/proc/thread-self"))?.[1]);
    if (Number.isInteger(tid)) setPriority(tid, Math.min(19, getPriority(tid) + by));
  } catch {
    // Not Linux, or refused: the thread keeps its priority.
  }
}

/** A module beside `base` (an `import.meta.url`), with base's extension: TypeScript through tsx, or the compiled JavaScript. */
export function moduleBeside(base: string, name: string): URL {
  return new URL(`${name}${base.endsWith(".ts") ? ".ts" : ".js"}`, base);
}

export interface SupervisedThreadOptions<Out> {
  /** The module the thread runs (a .ts module is loaded through tsx). */
  readonly entry: URL;
  /** The thread's `workerData`, asked again at each start (a restart may start from elsewhere). */
  readonly data: () => object;
  /** For the log's lines. */
  readonly name: string;
  readonly log: Logger;
  readonly onMessage: (message: Out) => void;
  /** The thread ended without being asked to (before it is started again). */
  readonly onEnded?: (code: number) => void;
  /** Restarts in a row, with no `progressed()` between them: the end after the last of them leaves it down (default: never). */
  readonly maxRestarts?: number;
  /**
   * Whether `/metrics` asks the thread for its values (default true). A thread that keeps none
   * and holds its event loop for long (a model thread's training step) says false, so that
   * `/metrics` does not wait for it.
   */
  readonly hasMetrics?: boolean;
}

export class SupervisedThread<In extends Typed, Out extends Typed> {
  private worker: Worker | null = null;
  private exited: Promise<void> = Promise.resolve();
  private stopping = false;
  private ends = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private readonly metricsRequests = new ThreadMetricsRequests(METRICS_WAIT_MS);
  private readonly removeMetricsSource: () => void;
  private markBooted: () => void = () => {};
  /**
   * Resolves once the first start has loaded and run the thread's entry module, or has ended
   * (its restarts are the supervision's). Loading a thread's modules takes about a second of a
   * core: a service that answers meanwhile answers its first requests slowly on a small machine.
   */
  readonly booted = new Promise<void>((resolve) => (this.markBooted = resolve));

  constructor(private readonly options: SupervisedThreadOptions<Out>) {
    this.start();
    this.removeMetricsSource = options.hasMetrics === false ? () => {} : addMetricsSource(() => this.metrics());
  }

  get running(): boolean {
    return this.worker !== null;
  }

  /** Dropped while the thread is down (it is started again from what `data` then says). `transfer`: buffers moved, not copied. */
  post(message: In, transfer: readonly Transferable[] = []): void {
    this.worker?.postMessage(message, transfer);
  }

  /** The thread did useful work: its ends in a row start counting again. */
  progressed(): void {
    this.ends = 0;
  }

  /** The thread's metrics; none while it is down or past METRICS_WAIT_MS. */
  metrics(): Promise<MetricsSnapshot> {
    const worker = this.worker;
    if (!worker) return Promise.resolve([]);
    return this.metricsRequests.ask((id) => worker.postMessage({ type: "metrics", id } satisfies MetricsAsk));
  }

  /**
   * Stops supervising it. With `ask` (a drain request), the thread is told and given `graceMs`
   * to end by itself before it is terminated; without, it is terminated at once.
   */
  async stop(ask?: { readonly message: In; readonly graceMs: number }): Promise<void> {
    this.stopping = true;
    this.removeMetricsSource();
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (!worker) return;
    if (!ask) {
      await worker.terminate();
      return;
    }
    worker.postMessage(ask.message);
    const cut = setTimeout(() => void worker.terminate(), ask.graceMs);
    await this.exited;
    clearTimeout(cut);
  }

  private start(): void {
    const { entry, data, name, log } = this.options;
    const worker = new Worker(BOOT, { workerData: { ...data(), entry: entry.href }, resourceLimits: THREAD_LIMITS });
    this.worker = worker;
    worker.on("message", (message: Out | MetricsAnswer | Booted) => {
      if (isMetricsAnswer(message)) this.metricsRequests.answered(message.id, message.snapshot);
      else if (isBooted(message)) this.markBooted();
      else this.options.onMessage(message);
    });
    worker.on("error", (err) => log.error({ err: errorText(err) }, `${name} thread failed`));
    this.exited = new Promise<void>((resolve) =>
      worker.once("exit", (code) => {
        this.worker = null;
        this.markBooted();
        resolve();
        if (this.stopping) return;
        this.options.onEnded?.(code);
        if (++this.ends > (this.options.maxRestarts ?? Infinity)) {
          log.error({ code }, `${name} thread ended again without progress: not started again`);
          return;
        }
        log.error({ code }, `${name} thread ended: starting it again`);
        this.restartTimer = setTimeout(() => this.start(), RESTART_MS);
      }),
    );
  }
}

const isMetricsAnswer = (message: Typed): message is MetricsAnswer => message.type === "metrics";
const isBooted = (message: Typed): message is Booted => message.type === "booted";

/**
 * The thread's side: hands each message to `onMessage`, answers metrics requests itself, and
 * returns how to tell the supervising thread something.
 */
export function serveThread<In extends Typed, Out extends Typed>(onMessage: (message: In) => void): {
  tell(message: Out, transfer?: readonly Transferable[]): void;
  close(): void;
} {
  const port = parentPort;
  if (!port) throw new Error("serveThread runs in a worker thread");
  port.on("message", (message: In | MetricsAsk) => {
    if (message.type !== "metrics") return onMessage(message as In);
    const { id } = message as MetricsAsk;
    void metricsSnapshot().then((snapshot) => port.postMessage({ type: "metrics", id, snapshot } satisfies MetricsAnswer));
  });
  return { tell: (message, transfer = []) => port.postMessage(message, transfer), close: () => port.close() };
}
