import type { CallPartEvent, CallsDeleteEvent, TraceEvent } from "../queue/events.js";
import type { CallSnapshot } from "../store/calls/callRows.js";
import { callKey, type CallsWriteRepository } from "../store/calls/callsWrite.js";
import { mergeCallParts, snapshotVersion, type OrphanPart } from "./callMerge.js";
import { nowMicros } from "../times.js";

/** Something more that the worker maintains from each batch's merged calls (thread aggregates). */
export interface CallsDerivedWriter {
  write(calls: readonly CallSnapshot[], deletes: readonly CallsDeleteEvent[]): Promise<void>;
}

interface Grouped {
  readonly withStart: CallPartEvent[][];
  readonly withoutStart: CallPartEvent[][];
  readonly deletes: CallsDeleteEvent[];
}

function group(events: readonly TraceEvent[]): Grouped {
  const parts = new Map<string, CallPartEvent[]>();
  const deletes: CallsDeleteEvent[] = [];
  for (const event of events) {
    if (event.kind === "calls_delete") {
      deletes.push(event);
      continue;
    }
    const key = callKey(event);
    const list = parts.get(key);
    if (list) list.push(event);
    else parts.set(key, [event]);
  }
  const withStart: CallPartEvent[][] = [];
  const withoutStart: CallPartEvent[][] = [];
  for (const list of parts.values()) (list.some((p) => p.kind === "call_start") ? withStart : withoutStart).push(list);
  return { withStart, withoutStart, deletes };
}

/** Start first, then parts parked earlier, then the batch's own ends and updates. */
function startFirst(list: readonly CallPartEvent[], parked: readonly CallPartEvent[] = []): CallPartEvent[] {
  return [...list.filter((p) => p.kind === "call_start"), ...parked, ...list.filter((p) => p.kind !== "call_start")];
}

/**
 * Turns one batch of events into storage writes. Parts are grouped per call; calls without
 * their start in the batch are read back from ClickHouse first, and parts of calls that
 * are still unknown are parked.
 *
 * Several writers may run at once (the processes of a cluster each write what they
 * received; a Kafka rebalance can briefly hand a partition to two consumers), so the start
 * and the end of one call can be in two batches written at the same moment. Each side
 * writes first and reads the other side after its writes are done: the start's batch
 * looks for parked parts of its calls, the parking batch looks again for the starts. Whatever the interleaving, at least one of them sees the other, and a
 * call found by both is merged twice into the same result.
 */
export class CallBatchWriter {
  constructor(
    private readonly repo: CallsWriteRepository,
    private readonly derived: readonly CallsDerivedWriter[] = [],
  ) {}

  async write(events: readonly TraceEvent[]): Promise<void> {
    const { withStart, withoutStart, deletes } = group(events);
    const existing = await this.repo.findSnapshots(withoutStart.map((l) => l[0]!));
    const started = withStart.map((list) => mergeCallParts(null, startFirst(list)).snapshot!);
    const continued: CallSnapshot[] = [];
    const parked: OrphanPart[][] = [];
    for (const list of withoutStart) {
      const result = mergeCallParts(existing.get(callKey(list[0]!)) ?? null, list);
      if (result.snapshot) continued.push(result.snapshot);
      if (result.orphans.length > 0) parked.push([...result.orphans]);
    }
    const now = nowMicros();
    await Promise.all([
      this.repo.insertSnapshots([...started, ...continued].map((snapshot) => ({ snapshot, version: snapshotVersion(snapshot, now) }))),
      this.repo.insertIndex(started),
      this.repo.insertOrphans(parked.flat(), now),
      this.repo.insertDeletions(deletes),
    ]);
    const [final, adopted] = await Promise.all([this.applyParked(withStart, started), this.adoptParked(parked)]);
    for (const writer of this.derived) await writer.write([...final, ...continued, ...adopted], deletes);
  }

  /** Calls started in this batch that had parts parked before: written again with them. */
  private async applyParked(withStart: CallPartEvent[][], started: CallSnapshot[]): Promise<CallSnapshot[]> {
    const orphans = await this.repo.findOrphans(withStart.map((l) => l[0]!));
    if (orphans.size === 0) return started;
    const final = withStart.map((list, i) => {
      const parkedParts = orphans.get(callKey(list[0]!));
      return parkedParts ? mergeCallParts(null, startFirst(list, parkedParts)).snapshot! : started[i]!;
    });
    await this.insertLater(final.filter((s, i) => s !== started[i]));
    return final;
  }

  /** Parts parked by this batch whose start was stored meanwhile by another writer. */
  private async adoptParked(parked: OrphanPart[][]): Promise<CallSnapshot[]> {
    if (parked.length === 0) return [];
    const found = await this.repo.findSnapshots(parked.map((l) => l[0]!));
    const adopted: CallSnapshot[] = [];
    for (const list of parked) {
      const stored = found.get(callKey(list[0]!));
      if (stored) adopted.push(mergeCallParts(stored, list).snapshot!);
    }
    await this.insertLater(adopted);
    return adopted;
  }

  private async insertLater(snapshots: readonly CallSnapshot[]): Promise<void> {
    const later = nowMicros() + 1;
    await this.repo.insertSnapshots(snapshots.map((snapshot) => ({ snapshot, version: snapshotVersion(snapshot, later) })));
  }
}
