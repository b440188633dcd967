import pino from "pino";
import { describe, expect, it } from "vitest";
import { RetryableError } from "../../services/errors.js";
import type { Delivery } from "../../services/queue/queue.js";
import { deliverWith } from "../../services/worker/delivery.js";

/** The consumer's side of one batch, as the log and Kafka give it: live until told otherwise, pauses counted, dead letters kept. */
function consumer(liveFor = Infinity) {
  const deadLetters: { messages: number[]; reason: string }[] = [];
  const pauses: number[] = [];
  const delivery: Delivery<number> = {
    live: () => pauses.length < liveFor,
    pause: async (ms) => void pauses.push(ms),
    deadLetter: async (messages, reason) => void deadLetters.push({ messages: [...messages], reason }),
  };
  return { delivery, deadLetters, pauses };
}

const deliver = (store: (messages: readonly number[]) => Promise<void>) => deliverWith(store, pino({ level: "silent" }), "test");

describe("the worker's delivery of a batch", () => {
  it("stores a batch at once when the store takes it", async () => {
    const stored: number[][] = [];
    const c = consumer();
    expect(await deliver(async (m) => void stored.push([...m]))([1, 2, 3], c.delivery)).toBe(true);
    expect(stored).toEqual([[1, 2, 3]]);
    expect(c.pauses).toEqual([]);
  });

  it("retries a store outage with doubling, capped backoff until it is over", async () => {
    let attempts = 0;
    const c = consumer();
    const ok = await deliver(async () => {
      if (++attempts <= 7) throw new RetryableError("down");
    })([1], c.delivery);
    expect(ok).toBe(true);
    expect(c.pauses).toEqual([200, 400, 800, 1600, 3200, 5000, 5000]);
  });

  it("gives the batch up, not stored, once the consumer stops during an outage", async () => {
    const c = consumer(2);
    expect(await deliver(async () => Promise.reject(new RetryableError("down")))([1, 2], c.delivery)).toBe(false);
    expect(c.deadLetters).toEqual([]);
  });

  it("splits a refused batch until the refused message is found: it alone goes to the dead letters, the rest is stored in order", async () => {
    const stored: number[] = [];
    const c = consumer();
    const ok = await deliver(async (m) => {
      if (m.includes(5) || m.includes(11)) throw new Error(`type mismatch in ${m.join(",")}`);
      stored.push(...m);
    })(Array.from({ length: 13 }, (_, i) => i), c.delivery);
    expect(ok).toBe(true);
    expect(stored).toEqual([0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 12]);
    expect(c.deadLetters).toEqual([{ messages: [5], reason: "type mismatch in 5" }, { messages: [11], reason: "type mismatch in 11" }]);
  });

  it("retries an outage met while narrowing down a refusal, and loses nothing", async () => {
    const stored: number[] = [];
    let outages = 1;
    const c = consumer();
    const ok = await deliver(async (m) => {
      if (m.length === 2 && outages-- > 0) throw new RetryableError("down");
      if (m.includes(3)) throw new Error("refused");
      stored.push(...m);
    })([0, 1, 2, 3], c.delivery);
    expect(ok).toBe(true);
    expect(stored).toEqual([0, 1, 2]);
    expect(c.deadLetters.map((d) => d.messages)).toEqual([[3]]);
    expect(c.pauses).toEqual([200]);
  });
});
