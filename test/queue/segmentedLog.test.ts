import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { crc32, tableCrc32 } from "../../services/queue/durableLog/storage/crc32.js";
import { lockDirectory, LogInUseError, processIdentity } from "../../services/queue/durableLog/storage/lock.js";
import { SegmentedLog } from "../../services/queue/durableLog/storage/segmentedLog.js";
import { openFilesUnder } from "./support/openFiles.js";

const root = mkdtempSync(join(tmpdir(), "segmented-log-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `d${dirs++}`);

const segmentFiles = (dir: string) => readdirSync(dir).filter((n) => n.endsWith(".log")).sort();
const lastSegment = (dir: string) => join(dir, segmentFiles(dir).at(-1)!);

async function readAll(log: SegmentedLog, from = log.committed): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (let at = from; at < log.end; ) {
    const { records, next } = await log.read(at, log.end, 64);
    out.push(...records.map((r) => Buffer.from(r.payload)));
    at = next;
  }
  return out;
}

/** Writes the groups, each one append (one sync); answers the log's directory and the end of every record. */
async function writeGroups(groups: Uint8Array[][], segmentBytes: number): Promise<{ dir: string; ends: number[] }> {
  const dir = freshDir();
  const log = await SegmentedLog.open(dir, { segmentBytes });
  const ends: number[] = [];
  for (const group of groups) ends.push(...(await log.append(group)));
  await log.close();
  return { dir, ends };
}

async function reopened(dir: string): Promise<{ log: SegmentedLog; records: Buffer[] }> {
  const log = await SegmentedLog.open(dir, { segmentBytes: 1 << 20 });
  return { log, records: await readAll(log) };
}

const payload = fc.uint8Array({ minLength: 1, maxLength: 60 });
const groups = fc.array(fc.array(payload, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 });

describe("CRC-32", () => {
  it("gives the standard check values, natively and by table, and continues across pieces", () => {
    for (const f of [crc32, tableCrc32]) {
      expect(f(Buffer.from(""))).toBe(0);
      expect(f(Buffer.from("123456789"))).toBe(0xcbf43926);
      expect(f(Buffer.from("The quick brown fox jumps over the lazy dog"))).toBe(0x414fa339);
      expect(f(Buffer.from("456789"), f(Buffer.from("123")))).toBe(0xcbf43926);
    }
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(300), (data, split) => {
      const at = Math.min(split, data.length);
      expect(tableCrc32(data)).toBe(crc32(data));
      expect(tableCrc32(data.subarray(at), tableCrc32(data.subarray(0, at)))).toBe(crc32(data));
    }));
  });
});

describe("the segmented log after a crash mid-append", () => {
  /**
   * A crash can leave the last segment holding any prefix of the bytes of the group being
   * written (the records before it were synced, and so acknowledged). Every cut point of
   * the last segment is tried: the log that opens holds exactly the records that lie wholly
   * before the cut, in order, and goes on appending after them.
   */
  it("keeps exactly the records wholly before the cut, at every byte offset of the last segment", async () => {
    await fc.assert(
      fc.asyncProperty(groups, fc.integer({ min: 40, max: 400 }), async (written, segmentBytes) => {
        const { dir, ends } = await writeGroups(written, segmentBytes);
        const flat = written.flat().map((p) => Buffer.from(p));
        const last = lastSegment(dir);
        const base = Number(last.slice(-24, -4));
        for (let cut = 0; cut <= statSync(last).size; cut++) {
          const copy = freshDir();
          cpSync(dir, copy, { recursive: true });
          truncateSync(lastSegment(copy), cut);
          const { log, records } = await reopened(copy);
          const kept = ends.filter((end) => end <= base + cut).length;
          expect(records).toEqual(flat.slice(0, kept));
          expect(log.end).toBe(kept === 0 ? 0 : ends[kept - 1]!);
          await log.append([Buffer.from("after")]);
          expect((await readAll(log)).at(-1)).toEqual(Buffer.from("after"));
          await log.close();
          rmSync(copy, { recursive: true, force: true });
        }
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 6 },
    );
  });

  it("cuts at the first damaged byte of the tail, and at bytes the file grew by that never arrived", async () => {
    await fc.assert(
      fc.asyncProperty(
        groups,
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.constant(new Uint8Array(64))),
        async (written, where, flip, garbage) => {
          const { dir, ends } = await writeGroups(written, 1 << 20);
          const flat = written.flat().map((p) => Buffer.from(p));
          const file = lastSegment(dir);
          const bytes = readFileSync(file);
          const at = where % bytes.length;
          bytes[at] = bytes[at]! ^ flip;
          writeFileSync(file, Buffer.concat([bytes, garbage]));
          const { log, records } = await reopened(dir);
          const intact = ends.filter((end) => end <= at).length;
          expect(records).toEqual(flat.slice(0, intact));
          await log.close();
          rmSync(dir, { recursive: true, force: true });
        },
      ),
      { numRuns: 150 },
    );
  });

  it("ignores garbage appended after intact records (zeros or random bytes) and reports the cut", async () => {
    const { dir } = await writeGroups([[Buffer.from("one"), Buffer.from("two")]], 1 << 20);
    writeFileSync(lastSegment(dir), Buffer.concat([readFileSync(lastSegment(dir)), Buffer.alloc(4096)]));
    const { log, records } = await reopened(dir);
    expect(records.map(String)).toEqual(["one", "two"]);
    expect(log.recovery.cuts).toEqual([expect.objectContaining({ at: 22, bytes: 4096, reason: "damaged", tail: true })]);
    await log.close();
  });
});

describe("segments, checkpoint and trimming", () => {
  it("rolls over to new segments, deletes those wholly before the committed position, and resumes there after reopening", async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open(dir, { segmentBytes: 50 });
    const ends: number[] = [];
    for (let i = 0; i < 12; i++) ends.push(...(await log.append([Buffer.from(`record-${String(i).padStart(2, "0")}`)])));
    expect(segmentFiles(dir).length).toBeGreaterThan(3);
    expect(segmentFiles(dir)[0]).toBe("00000000000000000000.log");
    await log.commit(ends[6]!);
    const remaining = segmentFiles(dir).map((n) => Number(n.slice(0, 20)));
    expect(remaining[0]!).toBeLessThanOrEqual(ends[6]!);
    expect(remaining.length).toBeLessThan(12);
    expect((await readAll(log)).map(String)).toEqual(Array.from({ length: 5 }, (_, i) => `record-${String(i + 7).padStart(2, "0")}`));
    await log.close();

    const again = await SegmentedLog.open(dir, { segmentBytes: 50 });
    expect(again.committed).toBe(ends[6]);
    expect(again.end).toBe(ends[11]);
    expect((await readAll(again)).map(String)).toEqual(Array.from({ length: 5 }, (_, i) => `record-${String(i + 7).padStart(2, "0")}`));
    await again.commit(again.end);
    expect(segmentFiles(dir)).toHaveLength(1);
    expect(await again.append([Buffer.from("next")])).toEqual([ends[11]! + 12]);
    await again.close();
  });

  it("opens a segment once for reads that ask for it at the same time, and closes every file", async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open(dir, { segmentBytes: 1 << 20 });
    for (let i = 0; i < 4; i++) await log.append([Buffer.from(`record-${i}`)]);
    const before = openFilesUnder(dir).length;
    const reads = await Promise.all(Array.from({ length: 4 }, () => log.read(0, log.end, 1 << 20)));
    expect(reads.map((r) => r.records.length)).toEqual([4, 4, 4, 4]);
    expect(openFilesUnder(dir).length).toBe(before + 1);
    await log.close();
    expect(openFilesUnder(dir)).toEqual([]);
  });

  it("replays the whole log when the checkpoint is damaged, and ignores a half-written temporary checkpoint", async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open(dir, { segmentBytes: 1 << 20 });
    const [first] = await log.append([Buffer.from("a"), Buffer.from("b")]);
    await log.commit(first!);
    await log.close();
    writeFileSync(join(dir, "checkpoint.tmp"), "half");
    const afterCommit = await reopened(dir);
    expect(afterCommit.records.map(String)).toEqual(["b"]);
    await afterCommit.log.close();
    writeFileSync(join(dir, "checkpoint"), Buffer.alloc(12, 7));
    const { log: replayed, records } = await reopened(dir);
    expect(replayed.recovery.checkpoint).toBe("damaged");
    expect(records.map(String)).toEqual(["a", "b"]);
    await replayed.close();
  });

  it("moves the damaged rest of an earlier segment aside and reads on from the next segment", async () => {
    const dir = freshDir();
    const log = await SegmentedLog.open(dir, { segmentBytes: 30 });
    for (const text of ["aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", "dddddddddd", "eeeeeeeeee"]) await log.append([Buffer.from(text)]);
    await log.close();
    const first = join(dir, segmentFiles(dir)[0]!);
    const bytes = readFileSync(first);
    bytes[bytes.length - 1] = bytes.at(-1)! ^ 1; // in the second record of the first segment
    writeFileSync(first, bytes);
    const { log: opened, records } = await reopened(dir);
    expect(records.map(String)).toEqual(["aaaaaaaaaa", "cccccccccc", "dddddddddd", "eeeeeeeeee"]);
    expect(opened.recovery.cuts).toEqual([expect.objectContaining({ tail: false, reason: "damaged", bytes: 18 })]);
    expect(existsSync(`${first}.damaged`)).toBe(true);
    await opened.close();
  });
});

describe("the log directory's lock", () => {
  it("refuses a second holder and takes over a lock left by a process that is gone", async () => {
    const lockDir = mkdtempSync(join(root, "lock-"));
    const release = await lockDirectory(lockDir);
    await expect(lockDirectory(lockDir)).rejects.toBeInstanceOf(LogInUseError);
    release();
    writeFileSync(join(lockDir, "lock"), "some-boot 999999999 12345"); // no such process
    const again = await lockDirectory(lockDir);
    expect(readFileSync(join(lockDir, "lock"), "utf8")).toBe(processIdentity(process.pid));
    again();
    expect(existsSync(join(lockDir, "lock"))).toBe(false);
  });

  it("refuses a lock another live process holds, or waits until that process is gone", async () => {
    const lockDir = mkdtempSync(join(root, "lock-"));
    const holder = spawn("sleep", ["1"]);
    const gone = new Promise((r) => holder.once("exit", r));
    writeFileSync(join(lockDir, "lock"), processIdentity(holder.pid!));
    await expect(lockDirectory(lockDir)).rejects.toBeInstanceOf(LogInUseError);
    const release = await lockDirectory(lockDir, 30_000);
    expect(holder.exitCode).not.toBeNull();
    await gone;
    release();
  });
});
