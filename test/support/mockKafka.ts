import { spawn } from "node:child_process";

/**
 * librdkafka's mock cluster (inside Debian's kcat): a real Kafka-protocol broker for tests
 * (or `brokerCount` of them, the partitions' leaders spread over them; `brokers` lists them all,
 * comma-separated, as KAFKA_BROKERS takes them).
 * Topics are auto-created with 4 partitions; admin.createTopics does not work against it.
 */
export interface MockKafka {
  readonly brokers: string;
  /** The kcat process (the fault tests pause it with SIGSTOP). */
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startMockKafka(brokerCount = 1): Promise<MockKafka> {
  const child = spawn("kcat", ["-C", "-b", "unused", "-t", "warmup", "-X", `test.mock.num.brokers=${brokerCount}`, "-d", "mock", "-o", "end"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const brokers = await new Promise<string>((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error("kcat mock broker did not start")), 15_000);
    child.once("exit", (code) => reject(new Error(`kcat exited with ${code}`)));
    // The broker logs every request: keep draining stderr, but look only until the address shows.
    let found = false;
    child.stderr.on("data", (chunk: Buffer) => {
      if (found) return;
      seen = (seen + chunk.toString()).slice(-10_000);
      const match = /bootstrap\.servers=(127\.0\.0\.1:\d+(?:,127\.0\.0\.1:\d+)*)(?=\s)/.exec(seen);
      if (match?.[1]) {
        found = true;
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
  return {
    brokers,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once("exit", () => done());
        child.kill("SIGTERM");
      }),
  };
}
