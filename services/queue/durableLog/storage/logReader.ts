import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { readRecords, SEGMENT_NAME, segmentName, type LogRecord } from "./segmentedLog.js";
import { SharedReader } from "./files.js";

interface ReadSegment {
  readonly base: number;
  readonly reader: SharedReader;
}

/**
 * Reads the records of a log that another thread of the process appends to and commits
 * (SegmentedLog): that thread opened it (cutting a damaged tail) and says how far it is
 * synced; this side reads only up to there, so it never sees a record being written. The
 * segment files are listed again when a read goes past the last one known (the log rolled
 * to a new one). A segment ends where its file ends; a position at the end of a segment
 * that is not the last goes on at the next one (also over the gaps that damage left).
 * Segments wholly before the committed position may be deleted by the other side: call
 * `release` so their files are closed.
 */
export class LogReader {
  private segments: ReadSegment[] = [];
  private listing: Promise<void> | null = null;

  constructor(readonly dir: string) {}

  async read(from: number, upTo: number, maxBytes: number): Promise<{ records: LogRecord[]; next: number }> {
    let position = from;
    let listed = false;
    if (this.segments.length === 0) await this.list();
    for (;;) {
      if (position >= upTo) return { records: [], next: position };
      const index = this.segmentIndexAt(position);
      const segment = this.segments[index]!;
      const handle = await segment.reader.handle();
      const size = (await handle.stat()).size;
      const following = this.segments[index + 1];
      if (position >= segment.base + size) {
        if (following) position = following.base;
        else if (listed) return { records: [], next: position };
        else await this.list();
        listed = true;
        continue;
      }
      const limit = Math.min(upTo, segment.base + size);
      const records = await readRecords(handle, segment.reader.path, segment.base, position, limit, maxBytes);
      const next = records.length > 0 ? records[records.length - 1]!.end : position;
      return { records, next: following && next >= segment.base + size ? following.base : next };
    }
  }

  /** Closes the files of the segments wholly before `position` (the committed one). */
  async release(position: number): Promise<void> {
    while (this.segments.length > 1 && this.segments[1]!.base <= position) await this.segments.shift()!.reader.close();
  }

  async close(): Promise<void> {
    for (const segment of this.segments) await segment.reader.close();
    this.segments = [];
  }

  private segmentIndexAt(position: number): number {
    for (let i = this.segments.length - 1; i >= 0; i--) if (this.segments[i]!.base <= position) return i;
    throw new RangeError(`position ${position} is before the log in ${this.dir}`);
  }

  /** One listing for the reads that ask at the same time: each would make its own segments (and files). */
  private list(): Promise<void> {
    this.listing ??= this.listSegments().finally(() => (this.listing = null));
    return this.listing;
  }

  private async listSegments(): Promise<void> {
    const known = new Map(this.segments.map((s) => [s.base, s]));
    const bases = (await readdir(this.dir)).flatMap((name) => {
      const match = SEGMENT_NAME.exec(name);
      return match ? [Number(match[1])] : [];
    });
    const first = this.segments[0]?.base ?? 0;
    const listed = bases.filter((base) => base >= first).sort((a, b) => a - b);
    // A segment the other side deleted meanwhile (committed past it) is closed here.
    const kept = new Set(listed);
    for (const [base, segment] of known) if (!kept.has(base)) await segment.reader.close();
    this.segments = listed.map((base) => known.get(base) ?? { base, reader: new SharedReader(join(this.dir, segmentName(base))) });
  }
}
