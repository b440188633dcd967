import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { toCallSchema } from "../../services/query/callView.js";
import type { CallRow, CallSnapshot } from "../../services/store/calls/callRows.js";
import { CallsWriteRepository } from "../../services/store/calls/callsWrite.js";
import { CALL_COMPUTED_FIELDS, opDisplayName, type ComputedInput } from "../../services/store/calls/computedFields.js";
import { CALLS_QUERY_FIELDS } from "../../services/store/calls/queryFields.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { compileQuery } from "../../services/store/expr/compile.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { callSnapshot } from "../support/callSnapshot.js";
import { freshStore } from "../support/database.js";
import { seededRandom } from "../support/seededRandom.js";

/**
 * Each computed `summary.weave` value (computedFields.ts) on random and edge rows written the
 * way the worker writes them: the value the JSON view shows equals what its SQL computes on
 * this ClickHouse, and `$eq` on the shown value finds the call.
 */

const PROJECT = "e/computed";
const T0 = 1_767_225_600_000_000;

const random = seededRandom(27);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

/** Pieces of op names: plain, percent escapes well formed and not (overlong, surrogate, past U+10FFFF, cut short). */
const NAME_PIECES = ["predict", "a b", "%20", "%41", "%C3%A9", "é", "+", "?", "#", "/", "\n", "%", "%zz", "%E0", "%C0%80", "%ED%A0%80", "%F4%90%80%80", "%F0%9F%98%80", "%00", "%E2%82%AC", "%e2%82%ac"];
const opName = (): string => {
  const name = Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(NAME_PIECES)).join("");
  return pick([
    `weave:///ent/proj/op/${name}:d1g3st`,
    `weave:///ent/proj/op/${name}:d1g3st`,
    `weave:///ent/proj/object/${name}:d1g3st`,
    `weave:///ent/proj/op/${name}`,
    "weave:///ent/proj/op/:d1g3st",
    `weave:///ent/proj/op/${name}:`,
    name,
    "llm",
  ]);
};

/** Counts as clients write them, and things that are not counts. */
const COUNTS: readonly JsonValue[] = [0, 1, 7, 250, 1.5, 0.25, 0.1, 1e21, -3, "2", " 3 ", "+4", "5.", ".5", "1e3", "1E2", "1e400", "0x10", "abc", "", "Infinity", true, null, {}, [1]];
const USAGE_KEYS = ["prompt_tokens", "input_tokens", "completion_tokens", "output_tokens", "total_tokens", "requests", "cache_read_input_tokens"];
const MODELS = ["gpt-4o", "gpt-4.1", "claude 3", "o3-mini"];

function usage(): JsonObject {
  const out: JsonObject = {};
  for (const model of MODELS) {
    if (random() < 0.5) continue;
    const entry: JsonObject = {};
    for (const key of USAGE_KEYS) if (random() < 0.4) entry[key] = pick(COUNTS);
    out[model] = entry;
  }
  return out;
}

function summary(): JsonObject | null {
  const roll = random();
  if (roll < 0.15) return null;
  if (roll < 0.25) return {};
  const out: JsonObject = {};
  if (random() < 0.6) out.status_counts = { success: pick(COUNTS), error: pick(COUNTS) };
  if (random() < 0.6) out.usage = usage();
  return out;
}

let n = 0;
function snapshot(fields: Partial<CallSnapshot> = {}): CallSnapshot {
  const id = `c${String(n++).padStart(3, "0")}`;
  const started = T0 + Math.floor(random() * 1e9);
  const ended = pick([null, started, started + 999, started + 1000, started + 1999, started - 1, started - 1500, started + Math.floor(random() * 1e10)]);
  return callSnapshot({
    project_id: PROJECT,
    id,
    trace_id: `t-${id}`,
    op_name: opName(),
    display_name: pick([null, null, "", "My Eval", opName()]),
    started_at: started,
    ended_at: ended,
    exception: pick([null, null, null, "", "ValueError: bad"]),
    summary: summary(),
    ...fields,
  });
}

const EDGES: Partial<CallSnapshot>[] = [
  { op_name: "weave:///e/p/op/a%20b:x", display_name: null },
  { op_name: "weave:///e/p/op/a%zz:x", display_name: "" },
  { op_name: "weave:///e/p/op/caf%C3%A9%2Fx:x" },
  { op_name: "weave:///e/p/op/bad%E0%A4:x" },
  { op_name: "weave:///e\n/p/op/n:d" },
  { ended_at: null, exception: "raised but running" },
  { exception: "", summary: { status_counts: { error: 3 } } },
  { summary: { status_counts: { error: "1" } } },
  { summary: { status_counts: { error: "+1" } } },
  { summary: { status_counts: { error: " 2 " } } },
  { summary: { status_counts: { error: true } } },
  { summary: { status_counts: { error: "1e400" } } },
  { summary: { status_counts: [1, 2] } },
  { summary: { usage: { a: { total_tokens: 30 }, b: { prompt_tokens: 5, input_tokens: 100, output_tokens: 2 } } } },
  { summary: { usage: { a: { requests: 1 } } } },
  { summary: { usage: { "": { prompt_tokens: 5 } } } },
  { summary: { usage: { a: { prompt_tokens: "x", input_tokens: "+7" } } } },
];

const SNAPSHOTS: CallSnapshot[] = [...EDGES.map((e) => snapshot({ exception: null, ...e })), ...Array.from({ length: 120 }, () => snapshot())];
const COMPUTED = Object.entries(CALL_COMPUTED_FIELDS);

type Stored = CallRow & Record<`c_${string}`, unknown>;

let store: ClickHouseStore;
let rows: Stored[];
beforeAll(async () => {
  store = await freshStore();
  await new CallsWriteRepository(store).insertSnapshots(SNAPSHOTS.map((snapshot) => ({ snapshot, version: 1 })));
  const pb = new ParamBuilder();
  const computed = COMPUTED.map(([key, field]) => `${field.sql(pb)} AS c_${key}`).join(", ");
  rows = await store.rows<Stored>("test_computed", {
    sql: `SELECT *, ${computed} FROM calls FINAL WHERE project_id = ${pb.str(PROJECT)} ORDER BY id`,
    params: pb.params,
  });
});
afterAll(async () => store.close());

const inputOf = (row: CallRow): ComputedInput => ({
  op_name: row.op_name,
  display_name: row.display_name,
  started_at: Number(row.started_at),
  ended_at: row.ended_at === null ? null : Number(row.ended_at),
  exception: row.exception,
  summary: row.summary === null ? null : (JSON.parse(row.summary) as JsonObject),
});

/** A SQL value as JSON reads it: Int64 comes back as a string. */
const sqlValue = (kind: string, value: unknown): unknown => (kind === "number" && value !== null ? Number(value) : value);

async function found(path: string, value: JsonValue): Promise<string[]> {
  const pb = new ParamBuilder();
  const where = compileQuery({ $expr: { $eq: [{ $getField: path }, { $literal: value as never }] } }, CALLS_QUERY_FIELDS, pb);
  const hits = await store.rows<{ id: string }>("test_computed_eq", {
    sql: `SELECT id FROM calls FINAL WHERE project_id = ${pb.str(PROJECT)} AND ${where}`,
    params: pb.params,
  });
  return hits.map((h) => h.id);
}

describe("computed summary.weave values", () => {
  it("stores every call", () => {
    expect(rows.map((r) => r.id)).toEqual(SNAPSHOTS.map((s) => s.id).sort());
  });

  it("the JSON view shows what the SQL computes, for every computed value", () => {
    for (const row of rows) {
      const shown = (toCallSchema(row).summary as { weave: Record<string, unknown> }).weave;
      for (const [key, field] of COMPUTED) {
        const sql = sqlValue(field.kind, row[`c_${key}`]);
        const value = field.value(inputOf(row));
        expect({ id: row.id, op_name: row.op_name, key, value }).toEqual({ id: row.id, op_name: row.op_name, key, value: sql });
        if (field.shown) expect({ id: row.id, key, shown: shown[key] }).toEqual({ id: row.id, key, shown: value });
        else expect(shown).not.toHaveProperty(key);
      }
    }
  });

  it("$eq on a shown value finds the call", async () => {
    const shownFields = COMPUTED.filter(([, field]) => field.shown);
    const byQuery = new Map<string, { path: string; value: JsonValue; ids: string[] }>();
    for (const row of rows) {
      const weave = (toCallSchema(row).summary as { weave: Record<string, JsonValue> }).weave;
      for (const [key] of shownFields) {
        const path = `summary.weave.${key}`;
        const q = JSON.stringify([path, weave[key]]);
        const entry = byQuery.get(q) ?? { path, value: weave[key]!, ids: [] };
        entry.ids.push(row.id);
        byQuery.set(q, entry);
      }
    }
    for (const { path, value, ids } of byQuery.values()) {
      expect({ path, value, found: await found(path, value) }).toEqual({ path, value, found: expect.arrayContaining(ids) });
    }
  });

  it("shows the Weave forms: the op's short name, whole milliseconds", () => {
    expect(opDisplayName("weave:///e/p/op/a%20b:x")).toBe("a b");
    expect(opDisplayName("weave:///e/p/op/a%zz:x")).toBe("a%zz");
    expect(opDisplayName("weave:///e/p/op/bad%E0%A4:x")).toBe("bad%E0%A4");
    expect(opDisplayName("weave:///e/p/object/x:d")).toBe("weave:///e/p/object/x:d");
    expect(opDisplayName("llm")).toBe("llm");
    const latency = CALL_COMPUTED_FIELDS.latency_ms!;
    const call = { op_name: "x", display_name: null, exception: null, summary: null, started_at: T0 };
    expect(latency.value({ ...call, ended_at: T0 + 1999 })).toBe(1);
    expect(latency.value({ ...call, ended_at: T0 - 1500 })).toBe(-1);
    expect(CALL_COMPUTED_FIELDS.trace_name!.value({ ...call, ended_at: null, op_name: "weave:///e/p/op/run:d", display_name: "" })).toBe("run");
  });
});
