import { workerData } from "node:worker_threads";
import type { Logger } from "pino";
import { serveThread, SupervisedThread } from "../../../supervisedThread.js";
import type { Deliver, Topic } from "../../queue.js";
import { LogConsumer, type LogConsumerOptions } from "./logConsumer.js";
import { LogReader } from "../storage/logReader.js";
import type { LoggedRecord } from "../admission/recentRecords.js";
import { errorText } from "../../../errors.js";

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

type Place = Pick<LoggedRecord<unknown>, "start" | "end" | "events" | "appendedAt" | "interactive">;

type ToThread =
  | { readonly type: "appended"; readonly records: readonly Place[]; readonly end: number }
  | { readonly type: "hurry"; readonly position: number }
  | { readonly type: "drain"; readonly ms: number };
type FromThread =
  | { readonly type: "stored"; readonly position: number }
  | { readonly type: "storedAhead"; readonly ends: readonly number[] }
  | { readonly type: "drained"; readonly position: number };

/** What the publisher's side is told by the thread. */
export interface StoredReports {
  /** Everything before `position` is stored. */
  commitStored(position: number): Promise<void>;
  /** The records ending at these positions were stored ahead of the others. */
  storedAhead(ends: readonly number[]): void;
}

/** How long past its drain time a thread may take to end before it is terminated. */
const END_GRACE_MS = 10_000;


/** The publisher's side: starts the thread, forwards the synced groups, commits what it stored. */
export class LogThread<T> {
  private thread: SupervisedThread<ToThread, FromThread> | null = null;

  constructor(
    private readonly start: () => Omit<ThreadStart, "entry" | "data">,
    private readonly entry: URL,
    private readonly data: unknown,
    private readonly reports: StoredReports,
    private readonly log: Logger,
  ) {}

  /**
   * Started again from the committed position when it ends (records handled twice: the handler
   * is idempotent). Resolves once the first start has loaded its modules (supervisedThread.ts).
   */
  run(): Promise<void> {
    this.thread = new SupervisedThread<ToThread, FromThread>({
      entry: this.entry,
      data: () => ({ ...this.start(), data: this.data }) satisfies Omit<ThreadStart, "entry">,
      name: "log consumer",
      log: this.log,
      onMessage: (message) => {
        if (message.type === "stored") void this.reports.commitStored(message.position).catch(() => {});
        else if (message.type === "storedAhead") this.reports.storedAhead(message.ends);
      },
    });
    return this.thread.booted;
  }

  appended(records: readonly LoggedRecord<T>[], end: number): void {
    const places = records.map(({ start, end, events, appendedAt, interactive }) => ({ start, end, events, appendedAt, interactive }));
    this.thread?.post({ type: "appended", records: places, end });
  }

  hurry(position: number): void {
    this.thread?.post({ type: "hurry", position });
  }

  async drain(ms: number): Promise<void> {
    await this.thread?.stop({ message: { type: "drain", ms }, graceMs: ms + END_GRACE_MS });
  }
}

/** The thread's side: consumes the log named in workerData with `handler`; `close` runs once drained. */
export function runLogThread<T>(topic: Topic<T>, deliver: Deliver<T>, log: Logger, close: () => Promise<void>): void {
  const start = workerData as ThreadStart;
  const reader = new LogReader(start.dir);
  const source = {
    read: (from: number, upTo: number, maxBytes: number) => reader.read(from, upTo, maxBytes),
    commit: async (position: number) => {
      tell({ type: "stored", position });
      await reader.release(position);
    },
    storedAhead: (ends: readonly number[]) => tell({ type: "storedAhead", ends }),
  };
  const consumer = new LogConsumer(topic, source, { ...start.settings, dir: start.dir, log }, start);
  const { tell, close: closePort } = serveThread<ToThread, FromThread>((message) => {
    if (message.type === "appended") {
      consumer.appended(message.records.map((r) => ({ ...r, messages: null })), message.end);
      return;
    }
    if (message.type === "hurry") {
      consumer.hurry(message.position);
      return;
    }
    void consumer
      .drain(message.ms)
      .then((position) => tell({ type: "drained", position }))
      .finally(async () => {
        await reader.close().catch(() => {});
        await close().catch((err: unknown) => log.error({ err: errorText(err) }, "closing the log consumer thread's store failed"));
        closePort();
        // Whatever else would keep the thread alive (a client's sockets) does not.
        setTimeout(() => process.exit(0), 1_000).unref();
      });
  });
  consumer.start(deliver);
  log.debug({ dir: start.dir, committed: start.committed, end: start.end }, "log consumer thread running");
}

/** What the thread's entry module was given (LogThread's `data`). */
export const logThreadData = (): unknown => (workerData as ThreadStart).data;
