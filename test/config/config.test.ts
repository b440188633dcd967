import { describe, expect, it } from "vitest";
import { ConfigError, DEFAULTS, loadConfig } from "../../services/config.js";

describe("configuration", () => {
  it("fills every default from named constants", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ ROLE: "all", PORT: DEFAULTS.PORT, DATA_DIR: "./data", BATCH_MAX_EVENTS: DEFAULTS.BATCH_MAX_EVENTS });
    expect(config.CLICKHOUSE_URL).toBeUndefined();
    expect(config.KAFKA_BROKERS).toBeUndefined();
  });

  it("coerces numbers and splits lists", () => {
    const config = loadConfig({ PORT: "9000", KAFKA_BROKERS: "a:9092, b:9092", TRUSTED_PROXIES: "10.0.0.1" });
    expect(config.PORT).toBe(9000);
    expect(config.KAFKA_BROKERS).toEqual(["a:9092", "b:9092"]);
    expect(config.TRUSTED_PROXIES).toEqual(["10.0.0.1"]);
  });

  it("names the variable that is wrong", () => {
    expect(() => loadConfig({ PORT: "eighty" })).toThrow(/PORT/);
    expect(() => loadConfig({ ROLE: "everything" })).toThrow(/ROLE/);
    expect(() => loadConfig({ CLICKHOUSE_URL: "not a url" })).toThrow(/CLICKHOUSE_URL/);
    expect(() => loadConfig({ CLICKHOUSE_DATABASE: "drop table" })).toThrow(/CLICKHOUSE_DATABASE/);
    expect(() => loadConfig({ HEAP_GROWING_PERCENT: "-5" })).toThrow(/HEAP_GROWING_PERCENT/);
  });

  it("parses AUTH_KEYS as a JSON array of keys and rejects short keys or bad JSON", () => {
    const config = loadConfig({ AUTH_KEYS: JSON.stringify([{ key: "k".repeat(20), username: "u", entities: ["acme"] }]) });
    expect(config.AUTH_KEYS).toEqual([{ key: "k".repeat(20), username: "u", entities: ["acme"] }]);
    expect(() => loadConfig({ AUTH_KEYS: "[{" })).toThrow(ConfigError);
    expect(() => loadConfig({ AUTH_KEYS: JSON.stringify([{ key: "short", username: "u", entities: ["a"] }]) })).toThrow(/AUTH_KEYS/);
  });

  it("puts the jobs topic beside the call events topic unless KAFKA_JOBS_TOPIC names one", () => {
    expect(loadConfig({}).KAFKA_JOBS_TOPIC).toBe(`${DEFAULTS.KAFKA_TOPIC}.jobs`);
    expect(loadConfig({ KAFKA_TOPIC: "calls" }).KAFKA_JOBS_TOPIC).toBe("calls.jobs");
    expect(loadConfig({ KAFKA_TOPIC: "calls", KAFKA_JOBS_TOPIC: "work" }).KAFKA_JOBS_TOPIC).toBe("work");
  });

  it("makes bigger worker batches with Kafka than on the durable log, unless BATCH_MAX_WAIT_MS and BATCH_MAX_BYTES say otherwise", () => {
    expect(loadConfig({})).toMatchObject({ BATCH_MAX_WAIT_MS: 200, BATCH_MAX_BYTES: 6 * 1024 ** 2 });
    expect(loadConfig({ KAFKA_BROKERS: "" })).toMatchObject({ BATCH_MAX_WAIT_MS: 200, BATCH_MAX_BYTES: 6 * 1024 ** 2 });
    expect(loadConfig({ KAFKA_BROKERS: "k:9092" })).toMatchObject({ BATCH_MAX_WAIT_MS: 2000, BATCH_MAX_BYTES: 12 * 1024 ** 2 });
    expect(loadConfig({ KAFKA_BROKERS: "k:9092", BATCH_MAX_WAIT_MS: "50", BATCH_MAX_BYTES: "1000" })).toMatchObject({ BATCH_MAX_WAIT_MS: 50, BATCH_MAX_BYTES: 1000 });
    expect(() => loadConfig({ BATCH_MAX_WAIT_MS: "0" })).toThrow(/BATCH_MAX_WAIT_MS/);
  });

  it("serves OTLP/gRPC on 4317 by default, on OTLP_GRPC_PORT when set, and not at all for 0", () => {
    expect(loadConfig({}).OTLP_GRPC_PORT).toBe(4317);
    expect(loadConfig({ OTLP_GRPC_PORT: "14317" }).OTLP_GRPC_PORT).toBe(14317);
    expect(loadConfig({ OTLP_GRPC_PORT: "0" }).OTLP_GRPC_PORT).toBe(0);
    expect(() => loadConfig({ OTLP_GRPC_PORT: "70000" })).toThrow(/OTLP_GRPC_PORT/);
  });

  it("bounds the durable log by LOG_MAX_BYTES", () => {
    expect(loadConfig({})).toMatchObject({ LOG_MAX_BYTES: 1024 ** 3, PROCESS_INDEX: 0 });
    expect(loadConfig({ LOG_MAX_BYTES: "1000" })).toMatchObject({ LOG_MAX_BYTES: 1000 });
    expect(() => loadConfig({ LOG_MAX_BYTES: "0" })).toThrow(/LOG_MAX_BYTES/);
  });

  it("stops the start on a variable it no longer reads, naming it and why, rather than ignoring it", () => {
    expect(() => loadConfig({ EMBEDDED_QUEUE: "memory" })).toThrow(/EMBEDDED_QUEUE is no longer read: the embedded queue is always the durable log/);
    expect(() => loadConfig({ LOG_CONSUMER: "inline", WORKER_LANES: "2" })).toThrow(/LOG_CONSUMER is no longer read.*WORKER_LANES is no longer read/);
  });

  it("bounds the job runner's settings", () => {
    expect(loadConfig({})).toMatchObject({ JOBS_CONCURRENCY: DEFAULTS.JOBS_CONCURRENCY, JOBS_MAX_ATTEMPTS: DEFAULTS.JOBS_MAX_ATTEMPTS, JOBS_LEASE_MS: DEFAULTS.JOBS_LEASE_MS });
    expect(() => loadConfig({ JOBS_CONCURRENCY: "0" })).toThrow(/JOBS_CONCURRENCY/);
    expect(() => loadConfig({ JOBS_LEASE_MS: "10" })).toThrow(/JOBS_LEASE_MS/);
  });
});
