import { callKey, type CallCompleteEvent, type CallEvent, type CallKey, type CallPartEvent, type CallsDeleteEvent } from "../queue/events.js";
import type { CallSnapshot, WrittenCall } from "../store/calls/callRows.js";
import type { CallsWriteRepository } from "../store/calls/callsWrite.js";
import { applyDeletes } from "./callDeletes.js";
import { isStartPart, mergeCallParts, snapshotVersion, type OrphanPart } from "./callMerge.js";
import { nowMicros } from "../times.js";

/** Something more that the worker maintains from each batch's merged calls (thread aggregates). */
export interface CallsDerivedWriter {
  /** `deleted`: every call the batch's deletes reached, and the batch's calls deleted before they came. */
  write(calls: readonly WrittenCall[], deleted: readonly CallKey[]): Promise<void>;
}

/** One call's parts, in arrival order (at least one), and its `callKey` (made once per call and batch). */
interface CallParts<P extends CallPartEvent = CallPartEvent> {
  readonly key: string;
  readonly parts: P[];
}

interface Grouped {
  readonly withStart: CallParts[];
  readonly withoutStart: CallParts[];
  readonly deletes: CallsDeleteEvent[];
}

function group(events: readonly CallEvent[]): Grouped {
  const calls = new Map<string, CallParts>();
  const deletes: CallsDeleteEvent[] = [];
  for (const event of events) {
    if (event.kind === "calls_delete") {
      deletes.push(event);
      continue;
    }
    const key = callKey(event);
    const found = calls.get(key);
    if (found) found.parts.push(event);
    else calls.set(key, { key, parts: [event] });
  }
  const withStart: CallParts[] = [];
  const withoutStart: CallParts[] = [];
  for (const call of calls.values()) (call.parts.some(isStartPart) ? withStart : withoutStart).push(call);
  return { withStart, withoutStart, deletes };
}

/** The calls' project and id (each one's first part holds them). */
const callsOf = (lists: readonly CallParts[]): CallKey[] => lists.map((l) => l.parts[0]!);

/** How many calls with parked parts a writer remembers (about 10 MB at most). */
const PARKED_REMEMBERED = 100_000;

/** The same parked parts, in the same order (the two reads of one batch: most often equal). */
function sameParts(a: readonly OrphanPart[], b: readonly OrphanPart[]): boolean {
  return a.length === b.length && a.every((part, i) => JSON.stringify(part) === JSON.stringify(b[i]));
}

/**
 * Turns one batch of events into storage writes. Parts are grouped per call; calls without
 * their start in the batch are read back from ClickHouse first, and parts of calls that
 * are still unknown are parked. Deletes are applied once the calls are written (callDeletes.ts).
 *
 * Several writers may run at once (the processes of a cluster each write what they
 * received; a Kafka rebalance can briefly hand a partition to two consumers), so the start
 * and the end of one call can be in two batches written at the same moment. Each side
 * writes first and reads the other side after its writes are done: the start's batch
 * looks for parked parts of its calls, the parking batch looks again for the starts. Whatever
 * the interleaving, at least one of them sees the other, and a call found by both is merged
 * twice into the same result. The start's batch also looks before it writes for the calls
 * this writer parked parts of (an end sent before its start, most often), so that those parts
 * go into its one write; its second look writes a call again only for parts parked elsewhere
 * or in between.
 *
 * An end that names its start time and finds no start also writes a placeholder row (and its
 * `call_index` row) so that the call shows finished at once; it is parked all the same, and the
 * start's side fills it in. A known start outranks a placeholder (callRows.ts), so the parking
 * batch's second look finds the start even when both rows exist. `call_index` keeps the last
 * row written per call, so the parts are parked only after the placeholder's index row is in,
 * and whichever side merges a start with parked parts writes the call's index row again:
 * the start's fields (its parent) are always the last written.
 */
export class CallBatchWriter {
  /**
   * The calls this writer parked parts of, oldest first (at most PARKED_REMEMBERED): their
   * start most often comes to this writer too (the same partition or lane), and only those
   * are looked up before the writes. The look after them finds any call's.
   */
  private readonly parkedHere = new Set<string>();

  constructor(
    private readonly repo: CallsWriteRepository,
    private readonly derived: readonly CallsDerivedWriter[] = [],
  ) {}

  private rememberParked(parked: readonly CallParts<OrphanPart>[]): void {
    for (const list of parked) this.parkedHere.add(list.key);
    for (const key of this.parkedHere) {
      if (this.parkedHere.size <= PARKED_REMEMBERED) break;
      this.parkedHere.delete(key);
    }
  }

  async write(events: readonly CallEvent[]): Promise<void> {
    const { withStart, withoutStart, deletes } = group(events);
    const parkedHereStarted = withStart.filter((l) => this.parkedHere.has(l.key));
    const [existing, parkedBefore] = await Promise.all([
      this.repo.findSnapshots(callsOf(withoutStart)),
      this.repo.findParked(callsOf(parkedHereStarted)),
    ]);
    const started = withStart.map((l) => mergeCallParts(null, l.parts, parkedBefore.get(l.key)).snapshot!);
    const continued: CallSnapshot[] = [];
    const placeholders: CallSnapshot[] = [];
    const parked: CallParts<OrphanPart>[] = [];
    for (const l of withoutStart) {
      const result = mergeCallParts(existing.get(l.key) ?? null, l.parts);
      if (result.snapshot) (result.snapshot.start_known ? continued : placeholders).push(result.snapshot);
      if (result.orphans.length > 0) parked.push({ key: l.key, parts: [...result.orphans] });
    }
    const now = nowMicros();
    const parkedParts = parked.flatMap((l) => l.parts);
    const parkAfterIndex = placeholders.length > 0;
    await Promise.all([
      this.repo.insertSnapshots([...started, ...continued, ...placeholders].map((snapshot) => ({ snapshot, version: snapshotVersion(snapshot, now) }))),
      this.repo.insertIndex([...started, ...placeholders]),
      parkAfterIndex ? undefined : this.repo.insertOrphans(parkedParts, now),
    ]);
    if (parkAfterIndex) await this.repo.insertOrphans(parkedParts, now);
    for (const l of parkedHereStarted) this.parkedHere.delete(l.key);
    this.rememberParked(parked);
    const [final, adopted] = await Promise.all([this.applyParked(withStart, started, parkedBefore), this.adoptParked(parked)]);
    const calls = [...final, ...continued, ...placeholders, ...adopted];
    const deleted = await applyDeletes(this.repo, deletes, calls);
    for (const writer of this.derived) await writer.write(calls, deleted);
  }

  /**
   * Writes calls that each come whole (an OTLP export's spans, made one at a time by `calls`):
   * each call's row is made as soon as it is, so that its objects die young (`CallRows`).
   * What `write` does for such calls, in the same order: no lookup before the writes (a
   * whole call needs none), its rows, then the parts parked for it meanwhile and the deletes
   * that cover it. `again(keys)` makes the calls of these keys anew, in order (repeats
   * included): for the rare call that has parts parked, and for calls this writer parked parts
   * of or that come twice among `calls`, which go through `write` instead.
   */
  async writeWhole(calls: Iterable<CallCompleteEvent>, expected: number, again: (keys: ReadonlySet<string>) => CallCompleteEvent[]): Promise<void> {
    const now = nowMicros();
    const rows = this.repo.callRowsFor(expected);
    const keys = new Set<string>();
    let allWhole = true;
    for (const call of calls) {
      const key = callKey(call);
      if (keys.has(key) || this.parkedHere.has(key)) allWhole = false;
      keys.add(key);
      const snapshot = mergeCallParts(null, [call]).snapshot!;
      rows.add(snapshot, snapshotVersion(snapshot, now));
    }
    if (!allWhole) {
      this.repo.discardRows(rows);
      return this.write(again(keys));
    }
    await this.repo.insertRows(rows);
    const written = await this.withParkedMeanwhile(rows.calls, again);
    const deleted = await applyDeletes(this.repo, [], written);
    for (const writer of this.derived) await writer.write(written, deleted);
  }

  /** `writeWhole`'s calls, those with parts parked meanwhile merged with them and written again. */
  private async withParkedMeanwhile(calls: readonly WrittenCall[], again: (keys: ReadonlySet<string>) => CallCompleteEvent[]): Promise<readonly WrittenCall[]> {
    const orphans = await this.repo.findOrphans(calls);
    if (orphans.size === 0) return calls;
    const merged = new Map<string, CallSnapshot>();
    for (const call of again(new Set(orphans.keys()))) {
      const key = callKey(call);
      merged.set(key, mergeCallParts(null, [call], orphans.get(key)).snapshot!);
    }
    await this.insertLater([...merged.values()]);
    return calls.map((call) => merged.get(callKey(call)) ?? call);
  }

  /**
   * Calls started in this batch with parts parked meanwhile (after `parkedBefore` was read, by
   * another writer): written again with them.
   */
  private async applyParked(withStart: readonly CallParts[], started: CallSnapshot[], parkedBefore: ReadonlyMap<string, readonly OrphanPart[]>): Promise<CallSnapshot[]> {
    const orphans = await this.repo.findOrphans(callsOf(withStart));
    if (orphans.size === 0) return started;
    const final = withStart.map((l, i) => {
      const parkedParts = orphans.get(l.key);
      return parkedParts && !sameParts(parkedParts, parkedBefore.get(l.key) ?? []) ? mergeCallParts(null, l.parts, parkedParts).snapshot! : started[i]!;
    });
    await this.insertLater(final.filter((s, i) => s !== started[i]));
    return final;
  }

  /** Parts parked by this batch whose start was stored meanwhile by another writer. */
  private async adoptParked(parked: readonly CallParts<OrphanPart>[]): Promise<CallSnapshot[]> {
    if (parked.length === 0) return [];
    const found = await this.repo.findSnapshots(callsOf(parked));
    const adopted: CallSnapshot[] = [];
    for (const l of parked) {
      const stored = found.get(l.key);
      // A placeholder found here is this batch's own (or another lone end's): nothing to adopt.
      if (stored?.start_known) adopted.push(mergeCallParts(stored, l.parts).snapshot!);
    }
    await this.insertLater(adopted);
    return adopted;
  }

  /** Calls merged with parked parts: their rows again, and their index rows after any placeholder's. */
  private async insertLater(snapshots: readonly CallSnapshot[]): Promise<void> {
    const later = nowMicros() + 1;
    await Promise.all([
      this.repo.insertSnapshots(snapshots.map((snapshot) => ({ snapshot, version: snapshotVersion(snapshot, later) }))),
      this.repo.insertIndex(snapshots),
    ]);
  }
}
