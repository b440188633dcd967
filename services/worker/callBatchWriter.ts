import type { CallPartEvent, CallsDeleteEvent, TraceEvent } from "../queue/events.js";
import { nowMicros } from "../queue/events.js";
import type { CallSnapshot } from "../store/calls/callRows.js";
import { callKey, type CallsWriteRepository } from "../store/calls/callsWrite.js";
import { mergeCallParts, snapshotVersion, type OrphanPart } from "./callMerge.js";

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
 * their start in the batch are read back from ClickHouse first. Calls whose start is in the
 * batch are written at once while parts parked before their start are looked up alongside;
 * the rare call that had some is written again, as a higher version, before the batch ends.
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
    const parked: OrphanPart[] = [];
    for (const list of withoutStart) {
      const result = mergeCallParts(existing.get(callKey(list[0]!)) ?? null, list);
      if (result.snapshot) continued.push(result.snapshot);
      parked.push(...result.orphans);
    }
    const now = nowMicros();
    const [orphans] = await Promise.all([
      this.repo.findOrphans(withStart.map((l) => l[0]!)),
      this.repo.insertSnapshots([...started, ...continued].map((snapshot) => ({ snapshot, version: snapshotVersion(snapshot, now) }))),
      this.repo.insertIndex(started),
      this.repo.insertOrphans(parked, now),
      this.repo.insertDeletions(deletes),
    ]);
    const final = await this.applyParked(withStart, started, orphans);
    for (const writer of this.derived) await writer.write([...final, ...continued], deletes);
  }

  private async applyParked(withStart: CallPartEvent[][], started: CallSnapshot[], orphans: Map<string, CallPartEvent[]>): Promise<CallSnapshot[]> {
    if (orphans.size === 0) return started;
    const final = withStart.map((list, i) => {
      const parkedParts = orphans.get(callKey(list[0]!));
      return parkedParts ? mergeCallParts(null, startFirst(list, parkedParts)).snapshot! : started[i]!;
    });
    const later = nowMicros() + 1;
    const rewritten = final.filter((s, i) => s !== started[i]);
    await this.repo.insertSnapshots(rewritten.map((snapshot) => ({ snapshot, version: snapshotVersion(snapshot, later) })));
    return final;
  }
}
