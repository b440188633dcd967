import { describe, expect, it } from "vitest";
import { compareCodePoints } from "../../services/digests.js";
import type { CallSnapshot } from "../../services/store/calls/callRows.js";
import { CallsWriteRepository } from "../../services/store/calls/callsWrite.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { callSnapshot } from "../support/callSnapshot.js";
import { seededRandom } from "../support/seededRandom.js";

/**
 * The order of the rows the worker sends: `calls` rows in (project_id, started_at, id) order
 * and `call_index` rows in (project_id, id) order, as their tables sort them, so ClickHouse
 * writes the part without sorting it (store/calls/callsWrite.ts); rows of one key keep the
 * order they were given in. What is sent is read from the bytes of each insert; storing and
 * reading back rows is what the rest of the suite does against ClickHouse.
 */

const snapshot = (project_id: string, id: string, started_at: number, op_name = "op"): CallSnapshot => callSnapshot({ project_id, id, started_at, op_name });

/** The inserts a repository sends, by table, kept as bytes. */
function recordingRepository(): { repo: CallsWriteRepository; sent: Map<string, Buffer> } {
  const sent = new Map<string, Buffer>();
  const store = { insertRowBinary: async (_name: string, table: string, _columns: readonly string[], rows: Uint8Array) => void sent.set(table, Buffer.from(rows)) };
  return { repo: new CallsWriteRepository(store as unknown as ClickHouseStore), sent };
}

/** Where each marker first appears in the bytes, in the order the markers appear. */
const inOrderSent = (bytes: Buffer, markers: readonly string[]): string[] =>
  markers.map((m) => ({ m, at: bytes.indexOf(m) })).filter((x) => x.at >= 0).sort((a, b) => a.at - b.at).map((x) => x.m);

describe("the order of the rows the worker inserts (store/calls/callsWrite.ts)", () => {
  const random = seededRandom(7);
  // Ids of one length, none part of another: each is found in the bytes once per row.
  const calls = Array.from({ length: 60 }, (_, i) =>
    snapshot(`proj-${"ab"[i % 2]}`, `id-${String(Math.floor(random() * 1e6)).padStart(6, "0")}-${String(i).padStart(2, "0")}`, 1_700_000_000_000_000 + Math.floor(random() * 5) * 1000));
  const ids = calls.map((c) => c.id);
  const sortedBy = (compare: (a: CallSnapshot, b: CallSnapshot) => number) => [...calls].sort(compare).map((c) => c.id);

  it("sends calls rows by project, start time, then id, whatever order they come in", async () => {
    const { repo, sent } = recordingRepository();
    await repo.insertSnapshots(calls.map((s) => ({ snapshot: s, version: 1 })));
    const expected = sortedBy((a, b) => compareCodePoints(a.project_id, b.project_id) || a.started_at - b.started_at || compareCodePoints(a.id, b.id));
    expect(expected).not.toEqual(ids);
    expect(inOrderSent(sent.get("calls")!, ids)).toEqual(expected);
  });

  it("sends call_index rows by project, then id", async () => {
    const { repo, sent } = recordingRepository();
    await repo.insertIndex(calls);
    expect(inOrderSent(sent.get("call_index")!, ids)).toEqual(sortedBy((a, b) => compareCodePoints(a.project_id, b.project_id) || compareCodePoints(a.id, b.id)));
  });

  it("keeps the given order of rows of one key (ReplacingMergeTree keeps the last of equal versions)", async () => {
    const { repo, sent } = recordingRepository();
    const twice = [snapshot("p", "same", 5, "op-given-first"), snapshot("p", "before", 1), snapshot("p", "same", 5, "op-given-second")];
    await repo.insertSnapshots(twice.map((s) => ({ snapshot: s, version: 1 })));
    expect(inOrderSent(sent.get("calls")!, ["op-given-first", "op-given-second", "before"])).toEqual(["before", "op-given-first", "op-given-second"]);
  });
});
