import { mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { LogReader } from "../../services/queue/durableLog/storage/logReader.js";
import { SegmentedLog } from "../../services/queue/durableLog/storage/segmentedLog.js";
import { openFilesUnder } from "./support/openFiles.js";

const root = mkdtempSync(join(tmpdir(), "log-reader-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `d${dirs++}`);

/** Everything the reader gives from `from` up to `upTo`, in small reads; and where it stopped. */
async function readUpTo(reader: LogReader, from: number, upTo: number): Promise<{ payloads: string[]; next: number }> {
  const payloads: string[] = [];
  let at = from;
  for (;;) {
    const { records, next } = await reader.read(at, upTo, 48);
    payloads.push(...records.map((r) => r.payload.toString()));
    if (records.length === 0 && next === at) return { payloads, next: at };
    at = next;
  }
}

const word = fc.string({ minLength: 1, maxLength: 40 });
const steps = fc.array(fc.record({ group: fc.array(word, { minLength: 1, maxLength: 5 }), read: fc.boolean(), commit: fc.boolean() }), { minLength: 1, maxLength: 20 });

describe("the log reader of another thread", () => {
  it("reads exactly the records appended, in order, up to the synced end it is told, across segments rolled and deleted meanwhile", async () => {
    await fc.assert(
      fc.asyncProperty(steps, async (plan) => {
        const dir = freshDir();
        const log = await SegmentedLog.open(dir, { segmentBytes: 128 });
        const reader = new LogReader(dir);
        const appended: string[] = [];
        const read: string[] = [];
        let at = 0;
        try {
          for (const step of plan) {
            await log.append(step.group.map((w) => Buffer.from(w)));
            appended.push(...step.group);
            if (!step.read) continue;
            const got = await readUpTo(reader, at, log.end);
            read.push(...got.payloads);
            at = got.next;
            if (step.commit) {
              await log.commit(at);
              await reader.release(at);
            }
          }
          const rest = await readUpTo(reader, at, log.end);
          read.push(...rest.payloads);
          expect(read).toEqual(appended);
          expect(rest.next).toBe(log.end);
        } finally {
          await reader.close();
          await log.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it("steps over the gap that a damaged segment left, as the log does", async () => {
    const dir = freshDir();
    let log = await SegmentedLog.open(dir, { segmentBytes: 64 });
    for (let i = 0; i < 12; i++) await log.append([Buffer.from(`record-${i}-${"x".repeat(20)}`)]);
    await log.close();
    const first = readdirSync(dir).filter((n) => n.endsWith(".log")).sort()[0]!;
    const bytes = readFileSync(join(dir, first));
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 3) ^ 0xff, bytes.length - 3);
    writeFileSync(join(dir, first), bytes);
    log = await SegmentedLog.open(dir, { segmentBytes: 64 });
    const expected: string[] = [];
    for (let at = log.committed; at < log.end; ) {
      const { records, next } = await log.read(at, log.end, 1 << 20);
      expected.push(...records.map((r) => r.payload.toString()));
      at = next;
    }
    const reader = new LogReader(dir);
    const got = await readUpTo(reader, log.committed, log.end);
    expect(expected.length).toBe(11);
    expect(got.payloads).toEqual(expected);
    await reader.close();
    await log.close();
  });
  it("closes the file of a segment deleted before it was released (no descriptor left to the garbage collector)", async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open(dir, { segmentBytes: 128 });
    const reader = new LogReader(dir);
    const deletedOpen = () => openFilesUnder(dir).filter((target) => target.endsWith("(deleted)")).length;
    try {
      for (let i = 0; i < 8; i++) await log.append([Buffer.from("x".repeat(60))]);
      const first = await readUpTo(reader, 0, log.end);
      expect(first.payloads).toHaveLength(8);
      // The other side commits and deletes the read segments; this side has not released them.
      await log.commit(first.next);
      for (let i = 0; i < 4; i++) await log.append([Buffer.from("y".repeat(60))]);
      const rest = await readUpTo(reader, first.next, log.end);
      expect(rest.payloads).toHaveLength(4);
      expect(deletedOpen()).toBe(0);
    } finally {
      await reader.close();
      await log.close();
    }
  });

  it("opens a segment once for reads that ask for it at the same time, and closes it", async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open(dir, { segmentBytes: 1 << 20 });
    const reader = new LogReader(dir);
    try {
      for (let i = 0; i < 4; i++) await log.append([Buffer.from(`record-${i}`)]);
      const before = openFilesUnder(dir).length;
      const reads = await Promise.all(Array.from({ length: 4 }, () => reader.read(0, log.end, 1 << 20)));
      expect(reads.map((r) => r.records.length)).toEqual([4, 4, 4, 4]);
      expect(openFilesUnder(dir).length).toBe(before + 1);
      await reader.close();
      expect(openFilesUnder(dir).length).toBe(before);
    } finally {
      await reader.close();
      await log.close();
    }
  });
});
