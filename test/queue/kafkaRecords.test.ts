import fc from "fast-check";
import { Partitioners, type PartitionMetadata } from "kafkajs";
import { describe, expect, it } from "vitest";
import { traceEventsTopic, type CallStartEvent } from "../../services/queue/events.js";
import { partitionOfKey, recordPacker, recordReader } from "../../services/queue/kafka/records.js";

const topic = traceEventsTopic("records");

function startEvent(id: string, inputs: CallStartEvent["inputs"] = {}): CallStartEvent {
  return {
    kind: "call_start", project_id: "acme/records", id, trace_id: "t", parent_id: null, thread_id: null, turn_id: null,
    op_name: "op", display_name: null, started_at: 1_700_000_000_000_000, attributes: {}, inputs, otel_dump: null,
    wb_user_id: "alice", wb_run_id: null, wb_run_step: null,
  };
}

/** The partition KafkaJS's own default partitioner gives a record of `key`. */
function kafkaJsPartition(key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId): PartitionMetadata => ({ partitionErrorCode: 0, partitionId, leader: 0, replicas: [], isr: [] }));
  return Partitioners.DefaultPartitioner()({ topic: "t", partitionMetadata, message: { key, value: null } });
}

describe("packed records (services/queue/kafka/records.ts)", () => {
  it("places every key in the partition KafkaJS's default partitioner gives it alone (any text, any partition count)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.uuid(), fc.string({ unit: "binary" })), fc.integer({ min: 1, max: 64 }), (key, partitions) => {
        expect(partitionOfKey(key, partitions)).toBe(kafkaJsPartition(key, partitions));
      }),
      { numRuns: 2_000 },
    );
  });

  it("packs a record per partition, in order, cut past 512 KB, and reads back the same messages", () => {
    const pack = recordPacker(topic);
    const read = recordReader(topic);
    const big = "x".repeat(100_000);
    const messages = Array.from({ length: 40 }, (_, i) => startEvent(`call-${i}`, { text: big }));
    const records = pack(messages, 3);
    for (const r of records) expect("partition" in r && r.value.length).toBeLessThanOrEqual(600_000);
    const byPartition = new Map<number, string[]>();
    for (const r of records) {
      if (!("partition" in r)) throw new Error("a packed record names its partition");
      const { messages: read_, malformed } = read(r.value);
      expect(malformed).toEqual([]);
      byPartition.set(r.partition, [...(byPartition.get(r.partition) ?? []), ...read_.map((m) => (m as CallStartEvent).id)]);
    }
    for (const [partition, ids] of byPartition) {
      expect(ids).toEqual(messages.filter((m) => partitionOfKey(topic.key(m), 3) === partition).map((m) => m.id));
    }
    expect(records.length).toBeGreaterThan(byPartition.size);
  });

  it("packs nothing while the partition count is unknown: a record per message, keyed", () => {
    const records = recordPacker(topic)([startEvent("a"), startEvent("b")], 0);
    expect(records).toEqual([startEvent("a"), startEvent("b")].map((m) => ({ key: topic.key(m), value: JSON.stringify(m) })));
  });

  it("reads a record that is not JSON, or one message not of the topic's shape, as malformed text, whole", () => {
    const read = recordReader(topic);
    expect(read(Buffer.from("{not json"))).toEqual({ messages: [], malformed: ["{not json"] });
    const wrong = JSON.stringify({ ...startEvent("w"), started_at: "yesterday" });
    expect(read(Buffer.from(wrong))).toEqual({ messages: [], malformed: [wrong] });
    expect(read(Buffer.from(JSON.stringify(startEvent("ok"))))).toEqual({ messages: [startEvent("ok")], malformed: [] });
  });
});
