import type { Admin } from "kafkajs";
import { errorText, RetryableError } from "../../errors.js";
import { BULK_HOLD_MS, isBulkWrite, LagBound, type LagLimits } from "../lagBound.js";
import type { ReadYourWrites } from "../queue.js";
import { kafkaClient, sleep, type KafkaSettings } from "./client.js";

/** A topic's end offsets and a group's committed offsets, by partition, read with one admin client. */
export class GroupOffsets {
  private readonly admin: Admin;
  private connected: Promise<void> | null = null;

  constructor(private readonly topic: string, private readonly settings: KafkaSettings) {
    this.admin = kafkaClient(settings).admin();
  }

  async ends(): Promise<Map<number, bigint>> {
    const offsets = await (await this.connect()).fetchTopicOffsets(this.topic);
    return new Map(offsets.map((p) => [p.partition, BigInt(p.high)]));
  }

  /** The group's committed offsets; a partition it never committed counts as 0. */
  async committed(): Promise<Map<number, bigint>> {
    return new Map((await this.committedAsRead()).map((p) => [p.partition, p.offset === "-1" ? 0n : BigInt(p.offset)]));
  }

  /** The group's committed offsets that are positions: not none (-1), nor a sentinel KafkaJS committed (consumer.ts). */
  async positions(): Promise<Map<number, bigint>> {
    return new Map((await this.committedAsRead()).filter((p) => BigInt(p.offset) >= 0n).map((p) => [p.partition, BigInt(p.offset)]));
  }

  private async committedAsRead(): Promise<{ partition: number; offset: string }[]> {
    const [topic] = await (await this.connect()).fetchOffsets({ groupId: this.settings.groupId, topics: [this.topic] });
    return topic?.partitions ?? [];
  }

  async close(): Promise<void> {
    if (this.connected) await this.admin.disconnect();
  }

  private async connect(): Promise<Admin> {
    this.connected ??= this.admin.connect();
    try {
      await this.connected;
    } catch (err) {
      this.connected = null;
      throw err;
    }
    return this.admin;
  }
}

/**
 * How soon a waiting barrier reads the group's committed offsets again (one read shared by every
 * waiter): 25 ms at first, then twice as long after each read, up to 100 ms while waiters remain.
 * A Kafka worker commits once a batch is stored, up to `BATCH_MAX_WAIT_MS` (2 s) apart under load:
 * read every 25 ms through such waits, the offsets cost the reading process more CPU than its
 * queries did in the cluster bench (docs/benchmarks.md); an answer comes at most 75 ms later.
 */
const STORED_POLL_MS = 25;
const STORED_POLL_MAX_MS = 100;

interface OffsetsWaiter {
  /** The topic's end offsets when the wait began, by partition: null until the next poll takes them. */
  ends: Map<number, bigint> | null;
  readonly resolve: () => void;
}

/**
 * Read-your-writes with Kafka, in any process: `stored` takes the topic's end offsets
 * (everything any ingest process had acknowledged by then), then waits until the worker
 * group's committed offsets reach them (the consumer commits each slice once stored). One
 * poll of the broker serves every concurrent waiter. Scopes are not told apart: a
 * partition holds many projects, so a wait for some covers the whole topic.
 */
export class KafkaStoredOffsets implements ReadYourWrites {
  private readonly offsets: GroupOffsets;
  private waiters: OffsetsWaiter[] = [];
  private polling: Promise<void> | null = null;
  private closed = false;

  constructor(topic: string, private readonly settings: KafkaSettings) {
    this.offsets = new GroupOffsets(topic, settings);
  }

  stored(timeoutMs: number, _scopes?: readonly string[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new RetryableError(`not stored within ${timeoutMs} ms`, 1));
      }, timeoutMs);
      const waiter: OffsetsWaiter = { ends: null, resolve: () => (clearTimeout(timer), resolve()) };
      this.waiters.push(waiter);
      this.polling ??= this.poll().finally(() => (this.polling = null));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.polling;
    await this.offsets.close();
  }

  /** While anyone waits: take end offsets for the newcomers, then the committed offsets for all. */
  private async poll(): Promise<void> {
    for (let pause = STORED_POLL_MS; this.waiters.length > 0 && !this.closed; pause = Math.min(pause * 2, STORED_POLL_MAX_MS)) {
      try {
        const newcomers = this.waiters.filter((w) => w.ends === null);
        if (newcomers.length > 0) {
          const ends = await this.offsets.ends();
          for (const w of newcomers) w.ends = ends;
        }
        const committed = await this.offsets.committed();
        for (const w of this.waiters) if (w.ends && reached(committed, w.ends)) w.resolve();
        this.waiters = this.waiters.filter((w) => !(w.ends && reached(committed, w.ends)));
      } catch (err) {
        // A broker not answering: the waiters time out unless it answers before.
        this.settings.log?.debug({ err: errorText(err) }, "read-your-writes: offsets not read");
      }
      if (this.waiters.length > 0) await sleep(pause);
    }
  }
}

function reached(committed: ReadonlyMap<number, bigint>, ends: ReadonlyMap<number, bigint>): boolean {
  for (const [partition, end] of ends) if ((committed.get(partition) ?? 0n) < end) return false;
  return true;
}

/** How often ingest reads the worker group's progress for the lag bound. */
const LAG_POLL_MS = 250;

/**
 * The lag bound with Kafka (the durable log's, lagBound.ts, per partition): ingest reads the
 * topic's end offsets and the worker group's committed offsets every LAG_POLL_MS; a partition
 * whose oldest message not yet stored (an offset at or past the committed one) was first seen
 * longer than `maxLagMs` ago holds bulk writes until it no longer does, for at most the bound's
 * hold (5 s), then refuses them (QueueFullError: 429 with Retry-After), while small writes go
 * on. Held rather than refused at once, as on the log: a client told to come back is away a
 * second at least, in which the workers drain their backlog and idle. The age is observed at the polls, so it reads up to LAG_POLL_MS young.
 * Every ingest process watches the whole group: writes from any of them make the lag.
 * The bound keeps the backlog within what the workers store in `maxLagMs`, far inside any
 * broker's retention, so the brokers never trim what the group has not read (the consumer
 * still says so loudly if they do: consumer.ts). With the offsets unreadable (a broker away)
 * the lag stays as last seen: if some partition lagged then, its age keeps growing and bulk
 * writes are refused for it until the worker counts as stalled (10 s); what is not refused
 * goes to the publish, which fails as unavailable on its own while the broker is away.
 */
export class KafkaLagWatch {
  private readonly offsets: GroupOffsets;
  private readonly partitions = new Map<number, { bound: LagBound; end: bigint; committed: bigint }>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Bulk writes waiting for the next poll. */
  private held: (() => void)[] = [];

  constructor(topic: string, private readonly settings: KafkaSettings, private readonly limits: LagLimits) {
    this.offsets = new GroupOffsets(topic, settings);
  }

  /** Starts watching (a bound of 0 watches nothing). */
  start(): void {
    if (this.limits.maxLagMs > 0) this.schedule(0);
  }

  /** Bulk by its size: more items or bytes than the limits say. */
  isBulk(write: { items: number; bytes: number }): boolean {
    return isBulkWrite(this.limits, write);
  }

  /** Resolves once no partition lags past the bound; rejects with the refusal once the hold is over first. */
  async admitBulk(): Promise<void> {
    const holdUntil = Date.now() + (this.limits.holdMs ?? BULK_HOLD_MS);
    for (let refused = this.refusal(); refused !== null; refused = this.refusal()) {
      if (this.closed || Date.now() >= holdUntil) throw refused;
      await new Promise<void>((resolve) => this.held.push(resolve));
    }
  }

  /** The refusal of a bulk write while some partition lags past the bound, else null. */
  refusal(now = Date.now()): Error | null {
    for (const { bound } of this.partitions.values()) {
      const refused = bound.refusal(now);
      if (refused) return refused;
    }
    return null;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.wakeHeld();
    await this.offsets.close();
  }

  private wakeHeld(): void {
    const held = this.held;
    this.held = [];
    for (const wake of held) wake();
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.poll().finally(() => {
        this.wakeHeld();
        this.schedule(LAG_POLL_MS);
      });
    }, ms);
  }

  private async poll(): Promise<void> {
    try {
      const [ends, committed] = await Promise.all([this.offsets.ends(), this.offsets.committed()]);
      const now = Date.now();
      for (const [partition, end] of ends) this.observe(partition, end, committed.get(partition) ?? 0n, now);
    } catch (err) {
      // Brokers away: the lag stays as last seen, and publishing fails on its own.
      this.settings.log?.debug({ err: errorText(err) }, "lag bound: offsets not read");
    }
  }

  private observe(partition: number, end: bigint, committed: bigint, now: number): void {
    let known = this.partitions.get(partition);
    if (!known) {
      this.partitions.set(partition, { bound: new LagBound(this.limits, Number(committed), Number(end), now), end, committed });
      return;
    }
    if (end > known.end) {
      known.end = end;
      known.bound.appended(Number(end), now);
    }
    // Only progress counts as storing: a worker that commits nothing stalls (LagBound).
    if (committed > known.committed) {
      known.committed = committed;
      known.bound.storedUpTo(Number(committed), now);
    }
  }
}
