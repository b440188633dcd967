import type { CallPartEvent, CallsDeleteEvent, TraceEvent } from "../queue/events.js";
import { nowMicros } from "../queue/events.js";
import type { CallSnapshot } from "../store/calls/callRows.js";
import { callKey, type CallsWriteRepository } from "../store/calls/callsWrite.js";
import { mergeCallParts, snapshotVersion, type OrphanPart } from "./callMerge.js";

/** Something more that the worker maintains from each batch's merged calls (thread aggregates). */
export interface CallsDerivedWriter {
  write(calls: readonly CallSnapshot[], deletes: readonly CallsDeleteEvent[]): Promise<void>;
}

/**
 * Turns one batch of events into storage writes. Parts are grouped per call; calls whose
 * start is in the batch pick up parts parked earlier, the others are read back from
 * ClickHouse; every touched call is written once, as a whole new version.
 */
export class CallBatchWriter {
  constructor(
    private readonly repo: CallsWriteRepository,
    private readonly derived: readonly CallsDerivedWriter[] = [],
  ) {}

  async write(events: readonly TraceEvent[]): Promise<void> {
    const parts = new Map<string, CallPartEvent[]>();
    const deletes: CallsDeleteEvent[] = [];
    for (const event of events) {
      if (event.kind === "calls_delete") {
        deletes.push(event);
        continue;
      }
      const key = callKey(event);
      const list = parts.get(key) ?? [];
      list.push(event);
      parts.set(key, list);
    }
    const merged = await this.merge(parts);
    const now = nowMicros();
    await Promise.all([
      this.repo.insertSnapshots(merged.snapshots.map((snapshot) => ({ snapshot, version: snapshotVersion(snapshot, now) }))),
      this.repo.insertIndex(merged.started),
      this.repo.insertOrphans(merged.orphans, now),
      this.repo.insertDeletions(deletes),
    ]);
    for (const writer of this.derived) await writer.write(merged.snapshots, deletes);
  }

  private async merge(parts: Map<string, CallPartEvent[]>) {
    const withStart: CallPartEvent[][] = [];
    const withoutStart: CallPartEvent[][] = [];
    for (const list of parts.values()) (list.some((p) => p.kind === "call_start") ? withStart : withoutStart).push(list);
    const [orphans, existing] = await Promise.all([
      this.repo.findOrphans(withStart.map((l) => l[0]!)),
      this.repo.findSnapshots(withoutStart.map((l) => l[0]!)),
    ]);
    const snapshots: CallSnapshot[] = [];
    const started: CallSnapshot[] = [];
    const parked: OrphanPart[] = [];
    for (const list of withStart) {
      const key = callKey(list[0]!);
      const start = list.filter((p) => p.kind === "call_start");
      const rest = list.filter((p) => p.kind !== "call_start");
      const result = mergeCallParts(null, [...start, ...(orphans.get(key) ?? []), ...rest]);
      if (result.snapshot) {
        snapshots.push(result.snapshot);
        started.push(result.snapshot);
      }
    }
    for (const list of withoutStart) {
      const result = mergeCallParts(existing.get(callKey(list[0]!)) ?? null, list);
      if (result.snapshot) snapshots.push(result.snapshot);
      parked.push(...result.orphans);
    }
    return { snapshots, started, orphans: parked };
  }
}
