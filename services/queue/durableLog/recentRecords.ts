/** A record's messages with its place in the log. */
export interface LoggedRecord<T> {
  readonly start: number;
  readonly end: number;
  readonly messages: readonly T[];
  /** ms since the epoch; 0 for a record read back from disk. */
  readonly appendedAt: number;
  /** Read back from disk: values that are not messages of the topic (set aside when taken). */
  readonly malformed?: readonly unknown[];
}

/**
 * The messages of the records appended last and not yet taken by the consumer, kept so the
 * consumer need not read and parse them again: a contiguous run of records up to the log's
 * synced end, bounded in events and log bytes by dropping the oldest first (the consumer
 * then reads those back from disk).
 */
export class RecentRecords<T> {
  private readonly records: LoggedRecord<T>[] = [];
  private eventCount = 0;
  private byteCount = 0;

  constructor(private readonly maxEvents: number, private readonly maxBytes: number) {}

  get events(): number {
    return this.eventCount;
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
    this.eventCount += record.messages.length;
    this.byteCount += record.end - record.start;
    while (this.records.length > 0 && (this.eventCount > this.maxEvents || this.byteCount > this.maxBytes)) this.takeFirst();
  }

  takeFirst(): LoggedRecord<T> {
    const first = this.records.shift()!;
    this.eventCount -= first.messages.length;
    this.byteCount -= first.end - first.start;
    return first;
  }

  clear(): void {
    while (this.records.length > 0) this.takeFirst();
  }
}
