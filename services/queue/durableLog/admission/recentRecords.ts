/** A record's place in the log, its event count and, when kept in memory, its messages. */
export interface LoggedRecord<T> {
  readonly start: number;
  readonly end: number;
  readonly events: number;
  /** null when only the record's place is known (a consumer in another thread reads it from the log). */
  readonly messages: readonly T[] | null;
  /** ms since the epoch; 0 for a record read back from disk. */
  readonly appendedAt: number;
  /** A small write, which the consumer may store ahead of a backlog (absent: no). */
  readonly interactive?: boolean;
  /** Read back from disk: values that are not messages of the topic (set aside when taken). */
  readonly malformed?: readonly unknown[];
}

/** A record read back from disk or kept in memory: its messages are known. */
export type DecodedRecord<T> = LoggedRecord<T> & { readonly messages: readonly T[] };

/**
 * The records appended last and not yet taken by the consumer: a contiguous run up to the
 * log's synced end, bounded in events and log bytes by dropping the oldest first (the
 * consumer then reads those back from disk). With their messages, so the consumer need not
 * read and parse them again, or only their places (then they tell how many events wait and
 * since when).
 */
export class RecentRecords<T> {
  private readonly records: LoggedRecord<T>[] = [];
  private eventCount = 0;
  private byteCount = 0;

  constructor(private readonly maxEvents: number, private readonly maxBytes: number) {}

  get events(): number {
    return this.eventCount;
  }

  /** Log bytes of the records kept. */
  get bytes(): number {
    return this.byteCount;
  }

  get first(): LoggedRecord<T> | undefined {
    return this.records[0];
  }

  /** Where the kept run starts: `end` (the synced end of the log) when nothing is kept. */
  startOr(end: number): number {
    return this.records.length > 0 ? this.records[0]!.start : end;
  }

  add(record: LoggedRecord<T>): void {
    this.records.push(record);
    this.eventCount += record.events;
    this.byteCount += record.end - record.start;
    while (this.records.length > 0 && (this.eventCount > this.maxEvents || this.byteCount > this.maxBytes)) this.takeFirst();
  }

  takeFirst(): LoggedRecord<T> {
    const first = this.records.shift()!;
    this.eventCount -= first.events;
    this.byteCount -= first.end - first.start;
    return first;
  }

  /** Forgets the records that end at or before `position` (read back from disk). */
  dropThrough(position: number): void {
    while (this.records.length > 0 && this.records[0]!.end <= position) this.takeFirst();
  }

  clear(): void {
    while (this.records.length > 0) this.takeFirst();
  }
}
