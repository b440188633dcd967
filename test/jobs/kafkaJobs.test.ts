import { randomBytes } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { jobsTopic, type JobMessage } from "../../services/queue/jobs.js";
import type { KafkaSettings } from "../../services/queue/kafka/client.js";
import { KafkaEventConsumer } from "../../services/queue/kafka/consumer.js";
import { KafkaEventPublisher } from "../../services/queue/kafka/publisher.js";
import { deadLetterTopic } from "../../services/queue/queue.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { JobsRepository } from "../../services/store/jobs/jobsRepository.js";
import type { JobRunner } from "../../services/worker/jobs/runner.js";
import { JobSubmitter, jobIntake } from "../../services/worker/jobs/submitter.js";
import { delivering } from "../support/delivery.js";
import { freshStore } from "../support/database.js";
import { countingRunner, ended, log, until, type Invocation } from "./support.js";

const unique = () => randomBytes(4).toString("hex");
const topic = jobsTopic(`jobs-${unique()}`);
const settings: KafkaSettings = { brokers: [inject("kafkaBrokers")], groupId: `g-${unique()}`, clientId: "jobs-test" };

let store: ClickHouseStore;
let jobs: JobsRepository;
let runner: JobRunner;
let publisher: KafkaEventPublisher<JobMessage>;
let consumer: KafkaEventConsumer<JobMessage>;
let submitter: JobSubmitter;
const invocations: Invocation[] = [];

beforeAll(async () => {
  store = await freshStore();
  jobs = new JobsRepository(store);
  runner = countingRunner(jobs, "k", invocations);
  publisher = new KafkaEventPublisher(topic, settings, { maxPendingEvents: 100, maxPendingBytes: 1 << 20 });
  consumer = new KafkaEventConsumer(topic, settings, { maxWaitMs: 100, maxBatchEvents: 100, maxBatchBytes: 1 << 20, log });
  await consumer.start(delivering(jobIntake(jobs, () => runner.wake())));
  submitter = new JobSubmitter(publisher, jobs, log);
  runner.start();
});

afterAll(async () => {
  await runner.stop();
  await consumer.shutdown();
  await publisher.close();
  await store.close();
});

describe("jobs through Kafka", () => {
  it("runs a submitted job once, even when its message is delivered again", async () => {
    const message = await submitter.submit({ type: "count", input: { to: 3 } });
    expect(await jobs.get(message.id)).not.toBeNull();
    expect(await ended(jobs, message.id)).toMatchObject({ status: "completed", output: { counted: 3 } });
    // Published straight to the topic, after the repeated message and with the same key:
    // only the consumer records it, and it reads one partition in order.
    const later: JobMessage = { ...message, id: `later-${unique()}`, submitted_at: message.submitted_at + 1 };
    await publisher.publish([message, later]);
    await ended(jobs, later.id);
    expect(invocations.filter((i) => i.jobId === message.id)).toHaveLength(1);
    expect((await jobs.get(message.id))!.status).toBe("completed");
  });

  it("records jobs the consumer reads, and sets messages not of the job shape aside on the dead-letter topic", async () => {
    const kafka = new Kafka({ clientId: "raw", brokers: [inject("kafkaBrokers")], logLevel: logLevel.NOTHING });
    const raw = kafka.producer();
    await raw.connect();
    const good: JobMessage = { id: `good-${unique()}`, type: "count", serial_key: "s", input: { to: 1 }, submitted_at: Date.now() * 1000 };
    const badInput = JSON.stringify({ ...good, id: "bad-input", input: [1, 2] });
    const noKey = JSON.stringify({ id: "no-key", type: "count", input: {}, submitted_at: 1 });
    await raw.send({ topic: topic.name, messages: [{ key: "s", value: badInput }, { key: "s", value: JSON.stringify(good) }, { key: "s", value: noKey }] });
    await raw.disconnect();

    // Published straight to the topic: only the consumer can have recorded it.
    expect(await ended(jobs, good.id)).toMatchObject({ status: "completed" });
    const reader = kafka.consumer({ groupId: `r-${unique()}` });
    const dead: string[] = [];
    await reader.connect();
    await reader.subscribe({ topic: deadLetterTopic(topic.name), fromBeginning: true });
    await reader.run({ eachMessage: async ({ message }) => void dead.push(message.value!.toString()) });
    await until(() => dead.length >= 2);
    await reader.disconnect();
    expect(dead.sort()).toEqual([badInput, noKey].sort());
    expect(await jobs.get("bad-input")).toBeNull();
    expect(await jobs.get("no-key")).toBeNull();
  });
});
