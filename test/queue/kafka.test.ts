import { randomBytes } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { traceEventsTopic, type CallStartEvent, type TraceEvent } from "../../services/queue/events.js";
import type { KafkaSettings } from "../../services/queue/kafka/client.js";
import { KafkaEventConsumer } from "../../services/queue/kafka/consumer.js";
import { KafkaStoredOffsets } from "../../services/queue/kafka/groupOffsets.js";
import { KafkaEventPublisher } from "../../services/queue/kafka/publisher.js";
import { deadLetterTopic, type BatchHandler, type Deliver } from "../../services/queue/queue.js";
import { deliverWith } from "../../services/worker/delivery.js";
import { QueueFullError, RetryableError, StoreUnavailableError } from "../../services/errors.js";
import { storeOn } from "../support/database.js";
import { sleep, until as pollUntil, type Probe } from "../support/polling.js";
import { client, iso, startTestService, waitStored } from "../support/service.js";

const log = pino({ level: "silent" });
const unique = () => randomBytes(4).toString("hex");

function settings(groupId: string): KafkaSettings {
  return { brokers: [inject("kafkaBrokers")], groupId, clientId: "test" };
}

function startEvent(id: string): CallStartEvent {
  return {
    kind: "call_start", project_id: "acme/kafka", id, trace_id: "t", parent_id: null, thread_id: null, turn_id: null,
    op_name: "op", display_name: null, started_at: 1_700_000_000_000_000, attributes: {}, inputs: {}, otel_dump: null,
    wb_user_id: "alice", wb_run_id: null, wb_run_step: null,
  };
}

const publisherOf = (topic: string, group: string) =>
  new KafkaEventPublisher(traceEventsTopic(topic), settings(group), { maxPendingEvents: 10_000, maxPendingBytes: 64 * 1024 * 1024 });
/** A consumer whose `start` takes the store and puts the worker's delivery in front of it, as the service does. */
function consumerOf(topic: string, kafka: KafkaSettings, { maxBatchEvents = 10_000, logger = log, maxWaitMs = 100 }: { maxBatchEvents?: number; logger?: typeof log; maxWaitMs?: number } = {}) {
  const consumer = new KafkaEventConsumer(traceEventsTopic(topic), kafka, { maxWaitMs, maxBatchEvents, maxBatchBytes: 1 << 24, log: logger });
  return {
    start: (store: BatchHandler<TraceEvent>) => consumer.start(deliverWith(store, logger, topic)),
    /** Without the worker's delivery: what `deliver` throws reaches KafkaJS. */
    startDelivering: (deliver: Deliver<TraceEvent>) => consumer.start(deliver),
    shutdown: () => consumer.shutdown(),
  };
}

/**
 * 120 s: a group's first join on the suite's shared broker took longer than 20 s once, and longer
 * than 60 s once, in loaded runs of the whole suite; the tests of consumer groups get 300 s
 * (GROUP_TESTS) for their few waits. A passing test waits only as long as the broker takes.
 */
const until = <T>(probe: Probe<T>): Promise<T> => pollUntil(probe, { timeoutMs: 120_000, everyMs: 100 });
const GROUP_TESTS = { timeout: 300_000 };

describe("the Kafka queue against a Kafka-protocol broker", GROUP_TESTS, () => {
  it("commits a batch only after the handler stored it: an unfinished batch is redelivered to the group", async () => {
    const topic = `commit-${unique()}`;
    const group = `g-${unique()}`;
    const publisher = publisherOf(topic, group);
    const events = Array.from({ length: 20 }, (_, i) => startEvent(`c${i}`));
    await publisher.publish(events);

    let attemptsA = 0;
    const a = consumerOf(topic, settings(group));
    await a.start(async () => {
      attemptsA++;
      throw new StoreUnavailableError("store down");
    });
    await until(async () => attemptsA > 0);
    await a.shutdown();

    const seen = new Set<string>();
    const b = consumerOf(topic, settings(group));
    await b.start(async (batch) => {
      for (const e of batch) if (e.kind === "call_start") seen.add(e.id);
    });
    await until(async () => seen.size === 20);
    await b.shutdown();
    await publisher.close();
    expect([...seen].sort()).toEqual(events.map((e) => e.id).sort());
  });

  it("hands a large fetch to the worker in slices of maxBatchEvents, committing each", async () => {
    const topic = `slices-${unique()}`;
    const group = `g-${unique()}`;
    const publisher = publisherOf(topic, group);
    const events = Array.from({ length: 95 }, (_, i) => startEvent(`s${i}`));
    await publisher.publish(events);
    await publisher.close();
    const sizes: number[] = [];
    const seen = new Set<string>();
    const consumer = consumerOf(topic, settings(group), { maxBatchEvents: 10 });
    await consumer.start(async (batch) => {
      sizes.push(batch.length);
      for (const e of batch) if (e.kind === "call_start") seen.add(e.id);
    });
    await until(async () => seen.size === 95);
    await consumer.shutdown();
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(95);
  });

  it("stores a lone write at once and a burst once fetches stop bringing more, without waiting out maxWaitMs", async () => {
    const topic = `burst-${unique()}`;
    const group = `g-${unique()}`;
    const publisher = publisherOf(topic, group);
    const batches: string[][] = [];
    // A wait far longer than the test's: what is stored, is stored before it ran out.
    const consumer = consumerOf(topic, settings(group), { maxWaitMs: 600_000 });
    await consumer.start(async (batch) => {
      batches.push(batch.flatMap((e) => (e.kind === "call_start" ? [e.id] : [])));
    });
    await publisher.publish([startEvent("lone")]);
    await until(async () => batches.length === 1);
    const burst = Array.from({ length: 40 }, (_, i) => startEvent(`b${i}`));
    for (let i = 0; i < burst.length; i += 10) await publisher.publish(burst.slice(i, i + 10));
    await until(async () => batches.flat().length === 41);
    await consumer.shutdown();
    await publisher.close();
    expect(batches[0]).toEqual(["lone"]);
    expect(batches.flat().sort()).toEqual(["lone", ...burst.map((e) => e.id)].sort());
  });

  it("sends events the store refuses to the dead-letter topic and goes on with the rest", async () => {
    const topic = `dlq-${unique()}`;
    const group = `g-${unique()}`;
    const publisher = publisherOf(topic, group);
    await publisher.publish([startEvent("good-1"), startEvent("poison"), startEvent("good-2")]);
    const stored: string[] = [];
    const consumer = consumerOf(topic, settings(group));
    await consumer.start(async (batch: readonly TraceEvent[]) => {
      if (batch.some((e) => e.kind === "call_start" && e.id === "poison")) throw new Error("type mismatch");
      for (const e of batch) if (e.kind === "call_start") stored.push(e.id);
    });
    await until(async () => stored.length === 2);

    const kafka = new Kafka({ clientId: "dlq-reader", brokers: [inject("kafkaBrokers")], logLevel: logLevel.NOTHING });
    const reader = kafka.consumer({ groupId: `r-${unique()}` });
    const dead: string[] = [];
    await reader.connect();
    await reader.subscribe({ topic: deadLetterTopic(topic), fromBeginning: true });
    await reader.run({ eachMessage: async ({ message }) => void dead.push(JSON.parse(message.value!.toString()).id) });
    await until(async () => dead.length === 1);
    await reader.disconnect();
    await consumer.shutdown();
    await publisher.close();
    expect(stored.sort()).toEqual(["good-1", "good-2"]);
    expect(dead).toEqual(["poison"]);
  });

  it("writes KafkaJS's own lines into the service's log at its level (the group join, with the partitions assigned)", async () => {
    const topic = `log-${unique()}`;
    const lines: { level: number; kafkajs?: string; msg: string; memberAssignment?: Record<string, number[]> }[] = [];
    const infoLog = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const consumer = consumerOf(topic, { ...settings(`g-${unique()}`), log: infoLog }, { maxBatchEvents: 100, logger: infoLog });
    await consumer.start(async () => {});
    const joined = await until(async () => lines.find((l) => l.msg === "Consumer has joined the group"));
    await consumer.shutdown();
    expect(joined).toMatchObject({ level: 30, kafkajs: "ConsumerGroup", memberAssignment: { [topic]: [0, 1, 2, 3] } });
    const quiet: unknown[] = [];
    const warnLog = pino({ level: "warn" }, { write: (line: string) => void quiet.push(line) });
    const second = consumerOf(topic, { ...settings(`g-${unique()}`), log: warnLog }, { maxBatchEvents: 100, logger: warnLog });
    await second.start(async () => {});
    await second.shutdown();
    expect(quiet).toEqual([]);
  });

  it("delivers a batch again when its delivery throws (an error past the delivery's own retries), never skipping it, and stores every event once", async () => {
    const topic = `crash-${unique()}`;
    const group = `g-${unique()}`;
    const publisher = publisherOf(topic, group);
    const events = Array.from({ length: 5 }, (_, i) => startEvent(`r${i}`));
    await publisher.publish(events);
    await publisher.close();
    const stored: string[] = [];
    let calls = 0;
    const consumer = consumerOf(topic, settings(group));
    await consumer.startDelivering(async (batch) => {
      calls++;
      // An error KafkaJS would not retry (a TypeError, say) had it reached it: the consumer retries the batch itself.
      if (calls === 1) throw Object.assign(new StoreUnavailableError("store gone"), { name: "TypeError" });
      for (const e of batch) if (e.kind === "call_start") stored.push(e.id);
      return true;
    });
    await until(async () => stored.length >= 5);
    await sleep(500);
    await consumer.shutdown();
    expect(stored.sort()).toEqual(events.map((e) => e.id).sort());
  });
});

interface ReadRecord {
  readonly partition: number;
  readonly key: string | null;
  readonly value: string;
}

/** A topic's records as a plain consumer reads them (in each partition's order), once there are `count`, or once `enough` says so. */
async function readAll(topic: string, count: number, enough = (seen: readonly ReadRecord[]) => seen.length >= count): Promise<ReadRecord[]> {
  const kafka = new Kafka({ clientId: "reader", brokers: [inject("kafkaBrokers")], logLevel: logLevel.NOTHING });
  const reader = kafka.consumer({ groupId: `r-${unique()}` });
  const seen: ReadRecord[] = [];
  await reader.connect();
  await reader.subscribe({ topic, fromBeginning: true });
  await reader.run({ eachMessage: async ({ partition, message }) => void seen.push({ partition, key: message.key?.toString() ?? null, value: message.value!.toString() }) });
  await until(async () => enough(seen));
  await reader.disconnect();
  return seen;
}

describe("messages that are not of the topic's shape", GROUP_TESTS, () => {
  it("go to the dead-letter topic as they were, the valid ones to the handler, and the offsets are committed", async () => {
    const topic = `malformed-${unique()}`;
    const group = `g-${unique()}`;
    const kafka = new Kafka({ clientId: "raw", brokers: [inject("kafkaBrokers")], logLevel: logLevel.NOTHING });
    const raw = kafka.producer();
    await raw.connect();
    const wrongShape = JSON.stringify({ ...startEvent("bad-shape"), started_at: "yesterday" });
    // One key: one partition, so the three stay in this order.
    await raw.send({ topic, messages: [
      { key: "k", value: "{not json" },
      { key: "k", value: JSON.stringify(startEvent("fine")) },
      { key: "k", value: wrongShape },
    ] });
    await raw.disconnect();

    const handled: string[] = [];
    const consumer = consumerOf(topic, settings(group));
    await consumer.start(async (batch) => {
      for (const e of batch) if (e.kind === "call_start") handled.push(e.id);
    });
    const dead = await readAll(deadLetterTopic(topic), 2);
    await until(async () => handled.length === 1);
    await consumer.shutdown();
    expect(handled).toEqual(["fine"]);
    expect(dead.map((m) => m.value).sort()).toEqual(["{not json", wrongShape].sort());
    expect(dead.map((m) => m.key)).toEqual(["k", "k"]);

    const admin = kafka.admin();
    await admin.connect();
    const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    await admin.disconnect();
    expect(committed!.partitions.map((p) => Number(p.offset)).filter((o) => o > 0)).toEqual([3]);
  });
});

describe("records packed a partition at a time", GROUP_TESTS, () => {
  it("a publish makes a record per partition (a JSON array, in order); each message lands in the partition its key alone takes", async () => {
    const topic = `packed-${unique()}`;
    const publisher = publisherOf(topic, `g-${unique()}`);
    // The first send knows no partition count yet: a record per message, placed by KafkaJS's partitioner.
    await publisher.publish([startEvent("alone")]);
    const events = Array.from({ length: 60 }, (_, i) => startEvent(i === 30 ? "alone" : `p${i}`));
    await publisher.publish(events);
    await publisher.close();
    const eventsIn = (r: ReadRecord) => [JSON.parse(r.value)].flat().length;
    const all = await readAll(topic, 0, (seen) => seen.reduce((n, r) => n + eventsIn(r), 0) >= 61);
    const first = all.find((r) => !r.value.startsWith("["));
    const packed = all.filter((r) => r !== first);
    expect(JSON.parse(first!.value)).toMatchObject({ id: "alone" });
    expect(packed.length).toBeGreaterThan(1);
    expect(packed.length).toBeLessThanOrEqual(4);
    const partitionOf = new Map<string, number>();
    const ids: string[] = [];
    expect(new Set(packed.map((r) => r.partition)).size).toBe(packed.length);
    for (const record of packed) {
      const messages = JSON.parse(record.value) as CallStartEvent[];
      expect(Array.isArray(messages)).toBe(true);
      for (const m of messages) {
        partitionOf.set(m.id, record.partition);
        ids.push(m.id);
      }
      // In each record the messages keep the order they were published in.
      const order = messages.map((m) => events.findIndex((e) => e.id === m.id));
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
    expect(ids.sort()).toEqual(events.map((e) => e.id).sort());
    expect(partitionOf.get("alone")).toBe(first!.partition);
  });

  it("a batch that ends inside a record commits only up to that record: the group's next member stores the rest of it", async () => {
    const topic = `cut-${unique()}`;
    const group = `g-${unique()}`;
    const publisher = publisherOf(topic, group);
    await publisher.publish([startEvent("first")]);
    const events = Array.from({ length: 95 }, (_, i) => startEvent(`c${i}`));
    await publisher.publish(events);
    await publisher.close();

    const sizes: number[] = [];
    const storedByA = new Set<string>();
    const a = consumerOf(topic, settings(group), { maxBatchEvents: 10 });
    await a.start(async (batch) => {
      if (sizes.length >= 5) throw new StoreUnavailableError("stops here");
      sizes.push(batch.length);
      for (const e of batch) if (e.kind === "call_start") storedByA.add(e.id);
    });
    await until(async () => sizes.length >= 5);
    await a.shutdown();

    const storedByB = new Set<string>();
    const b = consumerOf(topic, settings(group), { maxBatchEvents: 10 });
    await b.start(async (batch) => {
      sizes.push(batch.length);
      for (const e of batch) if (e.kind === "call_start") storedByB.add(e.id);
    });
    const everything = ["first", ...events.map((e) => e.id)].sort();
    await until(async () => new Set([...storedByA, ...storedByB]).size === everything.length);
    await sleep(500);
    await b.shutdown();
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10);
    expect([...new Set([...storedByA, ...storedByB])].sort()).toEqual(everything);
    // What A committed (whole records) B did not take again; what A stored of a record it did not finish, B did.
    expect(storedByB.size).toBeLessThan(everything.length);
    expect(storedByA.size + storedByB.size).toBeGreaterThanOrEqual(everything.length);
  });

  it("a packed record's messages not of the topic's shape go to the dead-letter topic one per record, as sent; the others to the handler", async () => {
    const topic = `packed-malformed-${unique()}`;
    const kafka = new Kafka({ clientId: "raw", brokers: [inject("kafkaBrokers")], logLevel: logLevel.NOTHING });
    const raw = kafka.producer();
    await raw.connect();
    const wrongShape = JSON.stringify({ ...startEvent("bad-shape"), started_at: "yesterday" });
    await raw.send({ topic, messages: [{ key: "k", value: `[${JSON.stringify(startEvent("fine-1"))},${wrongShape},${JSON.stringify(startEvent("fine-2"))}]` }] });
    await raw.disconnect();

    const handled: string[] = [];
    const consumer = consumerOf(topic, settings(`g-${unique()}`));
    await consumer.start(async (batch) => {
      for (const e of batch) if (e.kind === "call_start") handled.push(e.id);
    });
    const dead = await readAll(deadLetterTopic(topic), 1);
    await until(async () => handled.length === 2);
    await consumer.shutdown();
    expect(handled).toEqual(["fine-1", "fine-2"]);
    expect(dead.map((m) => [m.key, m.value])).toEqual([["k", wrongShape]]);
  });
});

describe("read-your-writes with Kafka: the worker group's committed offsets against the topic's end", () => {
  it("answers at once for a topic nothing was written to", async () => {
    const barrier = new KafkaStoredOffsets(`empty-${unique()}`, settings(`g-${unique()}`));
    await barrier.stored(10_000);
    await barrier.close();
  });

  it("waits, however many wait together, until the group stored everything published before the call; times out while nobody consumes", async () => {
    const topic = `stored-${unique()}`;
    const group = `g-${unique()}`;
    const publisher = publisherOf(topic, group);
    const barrier = new KafkaStoredOffsets(topic, settings(group));
    const events = Array.from({ length: 30 }, (_, i) => startEvent(`s${i}`));
    await publisher.publish(events);
    await expect(barrier.stored(300)).rejects.toBeInstanceOf(RetryableError);

    const stored = new Set<string>();
    const worker = consumerOf(topic, settings(group), { maxBatchEvents: 7 });
    await worker.start(async (batch) => {
      await sleep(20);
      for (const e of batch) if (e.kind === "call_start") stored.add(e.id);
    });
    const seenByEachWaiter = await Promise.all(Array.from({ length: 5 }, () => barrier.stored(20_000).then(() => stored.size)));
    expect(seenByEachWaiter).toEqual([30, 30, 30, 30, 30]);

    const later = Array.from({ length: 10 }, (_, i) => startEvent(`later${i}`));
    await publisher.publish(later);
    await barrier.stored(20_000);
    expect(stored.size).toBe(40);
    await worker.shutdown();
    await publisher.close();
    await barrier.close();
  });
});

describe("the lag bound with Kafka: the worker group's committed offsets against the topic's end, per partition", () => {
  it("holds bulk writes while the group's oldest unstored message is older than the bound, then refuses them (429, QueueFullError); admits small ones, and bulk ones again once it caught up", async () => {
    const topic = `lag-${unique()}`;
    const group = `g-${unique()}`;
    const bulk = (tag: string) => [startEvent(`${tag}-1`), startEvent(`${tag}-2`), startEvent(`${tag}-3`)];
    const publisher = new KafkaEventPublisher(traceEventsTopic(topic), settings(group), { maxPendingEvents: 10_000, maxPendingBytes: 1 << 26 }, { maxLagMs: 300, bulkItems: 2, bulkBytes: 1 << 20, holdMs: 1_000 });
    let release!: () => void;
    const stalled = new Promise<void>((r) => (release = r));
    const stored = new Set<string>();
    const consumer = consumerOf(topic, settings(group));
    await consumer.start(async (batch) => {
      await stalled;
      for (const e of batch) if (e.kind === "call_start") stored.add(e.id);
    });
    await publisher.publish(bulk("first"));
    let tries = 0;
    const heldFrom = Date.now();
    const refusal = await until(async () => publisher.publish(bulk(`try${tries++}`)).then(() => null, (err: unknown) => err));
    expect(refusal).toBeInstanceOf(QueueFullError);
    // Held for the hold (1 s here) before the refusal.
    expect(Date.now() - heldFrom).toBeGreaterThanOrEqual(1_000);
    expect((refusal as QueueFullError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    await expect(publisher.publish([startEvent("small")])).resolves.toBeUndefined();
    release();
    await until(async () => publisher.publish(bulk("after")).then(() => true, () => false));
    await until(async () => stored.has("after-3"));
    await consumer.shutdown();
    await publisher.close();
    expect(stored.has("small")).toBe(true);
  });
});

describe("the whole service in Kafka mode", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  beforeAll(async () => {
    service = await startTestService({ KAFKA_BROKERS: inject("kafkaBrokers"), KAFKA_TOPIC: `svc-${unique()}`, KAFKA_GROUP_ID: `g-${unique()}`, BATCH_MAX_WAIT_MS: "100" });
  });
  afterAll(async () => service.stop());

  it("stores calls published through Kafka, merging parts in any order", async () => {
    const api = client(service.url);
    const P = "acme/kafka-svc";
    const T = Date.UTC(2026, 10, 2);
    await api.json("/call/end", { end: { project_id: P, id: "k1", ended_at: iso(T + 500), summary: {}, output: 42 } });
    await api.json("/call/upsert_batch", { batch: [
      { mode: "start", req: { start: { project_id: P, id: "k1", op_name: "op", trace_id: "t", started_at: iso(T), attributes: {}, inputs: { a: 1 } } } },
      { mode: "start", req: { start: { project_id: P, id: "k2", op_name: "op", trace_id: "t", parent_id: "k1", started_at: iso(T + 1), attributes: {}, inputs: {} } } },
    ] });
    const calls = await until(async () => {
      const rows = await api.lines<{ id: string; output: unknown }>("/calls/stream_query", { project_id: P });
      return rows.length === 2 && rows[0]!.output === 42 ? rows : null;
    });
    expect(calls.map((c) => c.id)).toEqual(["k1", "k2"]);
  });

  it("reads a project's writes right after they are acknowledged, and /queue/stored waits for every write", async () => {
    const api = client(service.url);
    const P = "acme/kafka-ryw";
    const T = Date.UTC(2026, 10, 3);
    for (let i = 0; i < 5; i++) {
      await api.json("/call/start", { start: { project_id: P, id: `r${i}`, op_name: "op", trace_id: "t", started_at: iso(T + i), attributes: {}, inputs: {} } });
      const rows = await api.lines<{ id: string }>("/calls/stream_query", { project_id: P });
      expect(rows.map((c) => c.id)).toContain(`r${i}`);
    }
    await api.json("/call/start", { start: { project_id: P, id: "last", op_name: "op", trace_id: "t", started_at: iso(T + 10), attributes: {}, inputs: {} } });
    await waitStored(service.url);
    const store = await storeOn(service.database);
    const stored = await store.rows<{ n: string }>("test_count", { sql: `SELECT count() AS n FROM calls WHERE project_id = '${P}' AND id = 'last'`, params: {} });
    await store.close();
    expect(Number(stored[0]!.n)).toBeGreaterThan(0);
  });
});
