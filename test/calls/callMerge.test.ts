import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { CallCompleteEvent, CallEndEvent, CallPartEvent, CallStartEvent, CallUpdateEvent } from "../../services/queue/events.js";
import type { CallSnapshot } from "../../services/store/calls/callRows.js";
import { mergeCallParts, snapshotFromStart, UNKNOWN_START_OP_NAME, type OrphanPart } from "../../services/worker/callMerge.js";

/**
 * The merge held to its rule written plainly: start fields from the first start or complete
 * call of the batch, else the stored call; then parked parts, then each part in order (an end
 * or a complete call sets the end fields, an update the display name, a repeated start
 * nothing). Inputs are never changed.
 */
const T0 = Date.UTC(2026, 10, 24) * 1000;
const startArb = (n: number): CallStartEvent => ({
  kind: "call_start", project_id: "p", id: "c", trace_id: `t${n}`, parent_id: n % 2 ? "root" : null, thread_id: null, turn_id: null,
  op_name: `op${n}`, display_name: `d${n}`, started_at: T0 + n, attributes: { n }, inputs: { n }, otel_dump: null, wb_user_id: null,
  wb_run_id: null, wb_run_step: null,
});
const endArb = (n: number, named: boolean): CallEndEvent => ({
  kind: "call_end", project_id: "p", id: "c", ended_at: T0 + 1000 + n, exception: n % 3 ? null : `e${n}`, output: { n }, summary: { n },
  wb_run_step_end: n, ...(named ? { trace_id: null, started_at: T0 + n } : {}),
});
const completeArb = (n: number): CallCompleteEvent => {
  const { kind: _s, ...s } = startArb(n);
  const { kind: _e, trace_id: _t, started_at: _a, ...e } = endArb(n + 50, false);
  return { kind: "call_complete", ...s, ...e };
};
const updateArb = (n: number): CallUpdateEvent => ({ kind: "call_update", project_id: "p", id: "c", display_name: `u${n}`, updated_at: T0 });

const part = fc.tuple(fc.constantFrom("start", "complete", "end", "named_end", "update"), fc.nat(40)).map(([kind, n]): CallPartEvent => {
  if (kind === "start") return startArb(n);
  if (kind === "complete") return completeArb(n);
  if (kind === "update") return updateArb(n);
  return endArb(n, kind === "named_end");
});
const orphan = part.filter((p): p is OrphanPart => p.kind === "call_end" || p.kind === "call_update");
const stored = fc.option(fc.tuple(fc.nat(40), fc.boolean()).map(([n, known]): CallSnapshot => ({ ...snapshotFromStart(startArb(n + 100)), start_known: known })));

function expected(existing: CallSnapshot | null, parts: readonly CallPartEvent[], parked: readonly OrphanPart[]): CallSnapshot | null {
  const start = parts.find((p) => p.kind === "call_start" || p.kind === "call_complete") as CallStartEvent | CallCompleteEvent | undefined;
  const later = [...parked, ...parts];
  let call: CallSnapshot | null = start ? snapshotFromStart(start) : existing?.start_known ? existing : null;
  if (!call) {
    const named = later.find((p) => p.kind === "call_end" && typeof p.started_at === "number") as CallEndEvent | undefined;
    call = existing ?? (named ? { ...snapshotFromStart(startArb(0)), op_name: UNKNOWN_START_OP_NAME, trace_id: named.id, parent_id: null, display_name: null,
      started_at: named.started_at!, attributes: {}, inputs: {}, start_known: false } : null);
  }
  if (!call) return null;
  for (const p of later) {
    if (p.kind === "call_update") call = { ...call, display_name: p.display_name };
    if (p.kind === "call_end" || p.kind === "call_complete") {
      call = { ...call, ended_at: p.ended_at, exception: p.exception, output: p.output, summary: p.summary, wb_run_step_end: p.wb_run_step_end };
    }
  }
  return call;
}

describe("mergeCallParts", () => {
  it("gives the call the plain rule gives, for any stored call, parked parts and parts, and changes none of its inputs", () => {
    fc.assert(
      fc.property(stored, fc.array(part, { maxLength: 6 }), fc.array(orphan, { maxLength: 3 }), (existing, parts, parked) => {
        const before = structuredClone({ existing, parts, parked });
        const { snapshot, orphans } = mergeCallParts(existing, parts, parked);
        expect(snapshot).toEqual(expected(existing, parts, parked));
        const started = parts.some((p) => p.kind === "call_start" || p.kind === "call_complete") || existing?.start_known === true;
        expect(orphans).toEqual(started ? [] : [...parked, ...parts]);
        expect({ existing, parts, parked }).toEqual(before);
      }),
      { numRuns: 2000, seed: 24 },
    );
  });
});
