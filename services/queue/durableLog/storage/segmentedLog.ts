import { mkdir, open, readdir, unlink, writeFile, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { readCheckpoint, readFully, SharedReader, syncDirectory, writeCheckpoint, writeFully } from "./files.js";
import { frameAll, framingAt, HEADER_BYTES } from "./records.js";

/**
 * An append-only log of records in segment files, with a committed position.
 *
 * Positions are byte offsets in the log as a whole: a segment file is named by the position
 * of its first byte (20 digits) and holds the records from there on, whole. Appends go to
 * the last segment, one group at a time, each written and then synced once (fdatasync):
 * when `append` resolves, its records survive a crash. Past `segmentBytes` the next group
 * opens a new segment (its directory entry synced before anything is written to it).
 * `commit(p)` makes p the committed position (the checkpoint file) and deletes the
 * segments wholly before it.
 *
 * Opening reads the checkpoint and checks every record after it. A crash mid-append can
 * only damage the tail of the last segment: the log is cut at its first record that is not
 * whole and intact (torn or failing its checksum), so exactly the records appended before
 * that one remain, and the cut is reported. Damage inside an earlier segment cannot come
 * from a crash (a segment is complete and synced before the next one is opened); its bad
 * bytes are moved to `<segment>.damaged` for inspection and reading goes on with the next
 * segment, which leaves a gap in the positions that readers step over.
 */

export const SEGMENT_NAME = /^(\d{20})\.log$/;
export const segmentName = (base: number): string => `${String(base).padStart(20, "0")}.log`;
const SCAN_CHUNK_BYTES = 4 * 1024 * 1024;

interface Segment {
  readonly base: number;
  size: number;
  readonly reader: SharedReader;
}

export interface LogRecord {
  readonly start: number;
  readonly end: number;
  readonly payload: Buffer;
}

export interface LogCut {
  readonly segment: string;
  /** Offset in the segment file where the cut was made. */
  readonly at: number;
  readonly bytes: number;
  /** `torn`: the file ends inside the record; `damaged`: an impossible length or a checksum mismatch. */
  readonly reason: "torn" | "damaged";
  /** In the last segment, where a crash mid-append leaves its marks; elsewhere it is damage to the disk or file. */
  readonly tail: boolean;
}

/** What opening found: where reading starts, and what was cut away. */
export interface Recovery {
  readonly checkpoint: number | "absent" | "damaged";
  readonly committed: number;
  readonly end: number;
  readonly cuts: readonly LogCut[];
}

export class LogDamagedError extends Error {}

export class SegmentedLog {
  private appending = false;
  /** Set when a sync failed: what reached the disk is unknown, so nothing more is appended. */
  private failure: Error | null = null;

  private constructor(
    readonly dir: string,
    private readonly segments: Segment[],
    private writer: FileHandle,
    private committedPosition: number,
    private readonly segmentBytes: number,
    readonly recovery: Recovery,
  ) {}

  /** Opens (or creates) the log in `dir`, cutting a damaged tail; see `recovery` for what was found. */
  static async open(dir: string, options: { segmentBytes: number }): Promise<SegmentedLog> {
    await mkdir(dir, { recursive: true });
    const checkpoint = await readCheckpoint(dir);
    const segments = await listSegments(dir);
    if (segments.length === 0) segments.push(await createSegment(dir, typeof checkpoint === "number" ? checkpoint : 0));
    let committed = typeof checkpoint === "number" ? Math.max(checkpoint, segments[0]!.base) : segments[0]!.base;
    while (segments.length > 1 && segments[1]!.base <= committed) await unlink(join(dir, segmentName(segments.shift()!.base)));
    const cuts: LogCut[] = [];
    for (let i = 0; i < segments.length; i++) {
      const cut = await verifySegment(dir, segments[i]!, Math.max(committed, segments[i]!.base), i === segments.length - 1);
      if (cut) cuts.push(cut);
    }
    const last = segments[segments.length - 1]!;
    const end = last.base + last.size;
    committed = Math.min(committed, end);
    const writer = await open(join(dir, segmentName(last.base)), "r+");
    return new SegmentedLog(dir, segments, writer, committed, options.segmentBytes, { checkpoint, committed, end, cuts });
  }

  /** The position after the last appended record (everything before it is synced). */
  get end(): number {
    const last = this.segments[this.segments.length - 1]!;
    return last.base + last.size;
  }

  get committed(): number {
    return this.committedPosition;
  }

  get failed(): Error | null {
    return this.failure;
  }

  /**
   * Appends the payloads as consecutive records with one write and one sync; resolves with
   * each record's end position once they are durable. One append at a time. A failed write
   * is cut back off; a failed sync leaves the log refusing appends.
   */
  async append(payloads: readonly Uint8Array[]): Promise<number[]> {
    if (this.failure) throw this.failure;
    if (this.appending) throw new Error("SegmentedLog.append: one append at a time");
    this.appending = true;
    try {
      if (this.active.size >= this.segmentBytes) await this.roll();
      const segment = this.active;
      const framed = frameAll(payloads);
      await this.writeAt(framed, segment.size);
      try {
        await this.writer.datasync();
      } catch (err) {
        this.failure = err instanceof Error ? err : new Error(String(err));
        throw err;
      }
      const ends: number[] = [];
      let at = segment.base + segment.size;
      for (const p of payloads) ends.push((at += HEADER_BYTES + p.length));
      segment.size += framed.length;
      return ends;
    } finally {
      this.appending = false;
    }
  }

  /**
   * The whole records from `from` on, ending at or before `upTo`, about `maxBytes` of them
   * (at least one record when there is one); `next` is where the following read starts.
   * Steps over the gaps that damage left between segments.
   */
  async read(from: number, upTo: number, maxBytes: number): Promise<{ records: LogRecord[]; next: number }> {
    const position = this.skipGap(from);
    if (position >= upTo) return { records: [], next: position };
    const segment = this.segmentAt(position);
    const limit = Math.min(upTo, segment.base + segment.size);
    const records = await readRecords(await segment.reader.handle(), segment.reader.path, segment.base, position, limit, maxBytes);
    const at = records.length > 0 ? records[records.length - 1]!.end : position;
    return { records, next: this.skipGap(at) };
  }

  /** Makes `position` the committed one (durably), then deletes the segments wholly before it. */
  async commit(position: number): Promise<void> {
    if (position < this.committedPosition || position > this.end) throw new RangeError(`commit ${position} outside ${this.committedPosition}..${this.end}`);
    await writeCheckpoint(this.dir, position);
    this.committedPosition = position;
    while (this.segments.length > 1 && this.segments[1]!.base <= position) {
      const gone = this.segments.shift()!;
      await gone.reader.close();
      await unlink(join(this.dir, segmentName(gone.base)));
    }
  }

  async close(): Promise<void> {
    await this.writer.close();
    for (const segment of this.segments) {
      await segment.reader.close();
    }
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  private async writeAt(data: Buffer, offset: number): Promise<void> {
    try {
      await writeFully(this.writer, data, offset);
    } catch (err) {
      try {
        await this.writer.truncate(offset);
      } catch {
        this.failure = err instanceof Error ? err : new Error(String(err));
      }
      throw err;
    }
  }

  private async roll(): Promise<void> {
    const next = await createSegment(this.dir, this.end);
    const writer = await open(join(this.dir, segmentName(next.base)), "r+");
    await this.writer.close();
    this.writer = writer;
    this.segments.push(next);
  }

  private segmentAt(position: number): Segment {
    for (let i = this.segments.length - 1; i >= 0; i--) if (this.segments[i]!.base <= position) return this.segments[i]!;
    throw new RangeError(`position ${position} is before the log (${this.segments[0]!.base})`);
  }

  /** A position at the end of a segment that is not the last one: the next segment's start. */
  private skipGap(position: number): number {
    const segment = this.segmentAt(position);
    const index = this.segments.indexOf(segment);
    if (position >= segment.base + segment.size && index < this.segments.length - 1) return this.skipGap(this.segments[index + 1]!.base);
    return position;
  }
}

/**
 * The whole records of a segment file from `position` (a record boundary) on, ending at or
 * before `limit`, about `maxBytes` of them (at least one record when there is one).
 */
export async function readRecords(reader: FileHandle, name: string, base: number, position: number, limit: number, maxBytes: number): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  if (position >= limit) return records;
  let chunk = await readFully(reader, position - base, Math.min(maxBytes, limit - position));
  let at = 0;
  while (position + at < limit) {
    const framing = framingAt(chunk, at, limit - position - at);
    if (framing.kind === "more") {
      if (records.length > 0) break;
      chunk = await readFully(reader, position - base, framing.need);
      continue;
    }
    if (framing.kind !== "record") throw new LogDamagedError(`${name}: damaged record at offset ${position + at - base}`);
    const size = HEADER_BYTES + framing.length;
    records.push({ start: position + at, end: position + at + size, payload: chunk.subarray(at + HEADER_BYTES, at + size) });
    at += size;
  }
  return records;
}

async function listSegments(dir: string): Promise<Segment[]> {
  const segments: Segment[] = [];
  for (const name of await readdir(dir)) {
    const match = SEGMENT_NAME.exec(name);
    if (!match) continue;
    const handle = await open(join(dir, name), "r");
    try {
      segments.push({ base: Number(match[1]), size: (await handle.stat()).size, reader: new SharedReader(join(dir, name)) });
    } finally {
      await handle.close();
    }
  }
  return segments.sort((a, b) => a.base - b.base);
}

async function createSegment(dir: string, base: number): Promise<Segment> {
  const handle = await open(join(dir, segmentName(base)), "wx");
  await handle.close();
  await syncDirectory(dir);
  return { base, size: 0, reader: new SharedReader(join(dir, segmentName(base))) };
}

/**
 * Checks the records of a segment from `from` (a record boundary: the committed position or
 * the segment's start) to its end and cuts it at the first one that is not whole and intact.
 */
async function verifySegment(dir: string, segment: Segment, from: number, last: boolean): Promise<LogCut | null> {
  const path = join(dir, segmentName(segment.base));
  const handle = await open(path, "r+");
  try {
    const valid = await validEnd(handle, from - segment.base, segment.size);
    if (valid.end >= segment.size) return null;
    const bytes = segment.size - valid.end;
    if (!last) await writeFile(`${path}.damaged`, await readFully(handle, valid.end, bytes));
    await handle.truncate(valid.end);
    await handle.sync();
    segment.size = valid.end;
    return { segment: segmentName(segment.base), at: valid.end, bytes, reason: valid.reason, tail: last };
  } finally {
    await handle.close();
  }
}

async function validEnd(handle: FileHandle, from: number, size: number): Promise<{ end: number; reason: LogCut["reason"] }> {
  let offset = Math.min(from, size);
  let chunk = await readFully(handle, offset, Math.min(SCAN_CHUNK_BYTES, size - offset));
  let at = 0;
  for (;;) {
    const framing = framingAt(chunk, at, size - offset - at);
    if (framing.kind === "end") return { end: size, reason: "torn" };
    if (framing.kind === "torn" || framing.kind === "damaged") return { end: offset + at, reason: framing.kind };
    if (framing.kind === "more") {
      offset += at;
      at = 0;
      chunk = await readFully(handle, offset, Math.min(Math.max(SCAN_CHUNK_BYTES, framing.need), size - offset));
      continue;
    }
    at += HEADER_BYTES + framing.length;
  }
}
