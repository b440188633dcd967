import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { CallCreateBatchReq, CallEndReq, CallEndV2Req, CallStartReq, CallStartV2Req } from "../../services/contract/calls.js";
import { checkCallCreateBatch, checkCallEnd, checkCallStart } from "../../services/contract/callsFastCheck.js";

/**
 * The hand-written checks of the ingest bodies against their zod schemas, which stay the
 * contract: whatever a check takes, the schema takes too and parses to the same value, keys
 * in the same order; and a body the schema takes without stripping anything, the check takes
 * too (else the hot path would quietly fall back to zod).
 */

/** Values at the edges of every field's check, and of other kinds. */
const ODD: unknown[] = [
  null, true, false, 0, -0, 1, -7, 1.5, 2 ** 53, Number.MAX_SAFE_INTEGER, "", "x", "a/b", "a b/c", "a/b/c", "/b", "x".repeat(512), "x".repeat(513),
  "x".repeat(2048), "x".repeat(2049), "2026-11-21T10:00:00.123456Z", "2026-02-30T10:00:00Z", "2026-11-21T10:00:00+02:00", "2026-11-21", "not a date",
  [], [1], {}, { a: 1 }, { usage: null }, "start", "end",
];
const odd = fc.constantFrom(...ODD);

/** Mostly values a field takes, sometimes one at or past the edge of its check. */
const mostly = <T>(usual: fc.Arbitrary<T>, edges: fc.Arbitrary<T>) => fc.oneof({ weight: 15, arbitrary: usual }, { weight: 1, arbitrary: edges });
const dates = mostly(
  fc.constantFrom("2026-11-21T10:00:00.123456Z", "2026-11-21T10:00:00Z", "2026-11-21T10:00:00.5+02:00", "2024-02-29T23:59:59Z"),
  fc.constantFrom("2026-13-01T00:00:00Z", "tomorrow", ""),
);
const ids = mostly(fc.string({ minLength: 1, maxLength: 4 }), fc.constantFrom("", "x".repeat(512), "x".repeat(513)));
const projects = mostly(fc.constantFrom("acme/p", "a/b", "ünï/cödé"), fc.constantFrom("acme/p q", "acme", "a/b/c"));
const ints = mostly(fc.integer(), fc.constantFrom(1.5, 2 ** 53, -(2 ** 53) + 1, -0));
const jsonObjects = fc.oneof(fc.object({ maxDepth: 2, maxKeys: 3 }), fc.constant({}));
const json = fc.jsonValue({ maxDepth: 2 });
const nullish = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) });

/** A field: its usual values (a valid value most of the time), sometimes an odd one, sometimes absent. */
type Fields = Record<string, fc.Arbitrary<unknown>>;
const ABSENT = Symbol("absent");

/**
 * Objects with these fields, each sometimes absent or odd, sometimes an unknown key or an
 * `undefined` value, keys in a random order.
 */
function objectOf(fields: Fields): fc.Arbitrary<Record<string, unknown>> {
  const entries = Object.entries(fields).map(([key, arb]) =>
    fc.tuple(fc.constant(key), fc.oneof({ weight: 60, arbitrary: arb }, { weight: 1, arbitrary: odd }, { weight: 2, arbitrary: fc.constant(ABSENT) }), fc.integer()),
  );
  const extra = fc.oneof({ weight: 40, arbitrary: fc.constant<[string, unknown, number][]>([]) }, { weight: 1, arbitrary: fc.constantFrom<[string, unknown, number][]>([["unknown_field", 1, 0]], [["id", undefined, 0]], [["__proto__", {}, 0]]) });
  return fc.tuple(fc.tuple(...entries), extra).map(([list, more]) => {
    const out: Record<string, unknown> = {};
    const all = [...list, ...more].filter(([, v]) => v !== ABSENT).sort((a, b) => a[2] - b[2]);
    for (const [key, value] of all) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    return out;
  });
}

const start = objectOf({
  project_id: projects, id: nullish(ids), op_name: mostly(ids, fc.constant("x".repeat(2049))), display_name: nullish(ids), trace_id: nullish(ids), parent_id: nullish(ids),
  thread_id: nullish(ids), turn_id: nullish(ids), started_at: dates, attributes: jsonObjects, inputs: jsonObjects, otel_dump: nullish(jsonObjects),
  wb_user_id: nullish(ids), wb_run_id: nullish(ids), wb_run_step: nullish(ints),
});
const usage = objectOf({ prompt_tokens: nullish(ints), completion_tokens: nullish(ints), requests: nullish(ints), total_tokens: nullish(ints), cost: json });
const summary = objectOf({
  usage: nullish(fc.dictionary(fc.constantFrom("gpt-4o", "m", "__proto__", "1"), usage, { maxKeys: 2 })),
  status_counts: nullish(fc.dictionary(fc.constantFrom("success", "error"), ints, { maxKeys: 2 })),
  weave: fc.jsonValue({ maxDepth: 1 }),
});
const end = objectOf({
  project_id: projects, id: ids, ended_at: dates, exception: nullish(ids), output: json, summary, wb_run_step_end: nullish(ints), trace_id: nullish(ids),
  started_at: nullish(dates), is_eval: nullish(fc.boolean()),
});
const batchItem = fc.oneof(
  objectOf({ mode: fc.constant("start"), req: objectOf({ start }) }),
  objectOf({ mode: fc.constant("end"), req: objectOf({ end }) }),
);
const batch = objectOf({ batch: fc.array(batchItem, { maxLength: 4 }) });

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The parse kept every key the body has, and the body holds no `undefined`: nothing for zod to strip or to say. */
function keptWhole(input: unknown, parsed: unknown): boolean {
  if (input === undefined) return false;
  if (Array.isArray(input)) return Array.isArray(parsed) && input.length === parsed.length && input.every((v, i) => keptWhole(v, parsed[i]));
  if (!isPlain(input)) return true;
  if (!isPlain(parsed)) return false;
  const keys = Object.keys(input);
  return keys.length === Object.keys(parsed).length && keys.every((k) => Object.prototype.hasOwnProperty.call(parsed, k) && keptWhole(input[k], parsed[k]));
}

/** The generators may make objects without a prototype; JSON.parse never does. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) Object.defineProperty(out, key, { value: plain(v), enumerable: true, writable: true, configurable: true });
  return out;
}

/** How many bodies the checks took: the properties must see both sides. */
const taken = { yes: 0, no: 0 };

function agrees(schema: z.ZodType, check: (body: unknown) => unknown, generated: unknown): void {
  const body = plain(generated);
  const fast = check(body);
  taken[fast === null ? "no" : "yes"]++;
  const parsed = schema.safeParse(body);
  if (fast !== null) {
    expect(parsed.success).toBe(true);
    expect(fast).toStrictEqual(parsed.data);
    expect(JSON.stringify(fast)).toBe(JSON.stringify(parsed.data));
  } else if (parsed.success && keptWhole(body, parsed.data)) {
    expect.fail(`the check refused a body the schema takes whole: ${JSON.stringify(body)}`);
  }
}

const RUNS = { numRuns: 3000 };

describe("hand-written ingest body checks agree with the zod contract", () => {
  it("upsert_batch", () => {
    taken.yes = taken.no = 0;
    fc.assert(fc.property(batch, (body) => agrees(CallCreateBatchReq, checkCallCreateBatch, body)), RUNS);
    expect(Math.min(taken.yes, taken.no)).toBeGreaterThan(RUNS.numRuns / 20);
  });

  it("call/start and v2 call/start", () => {
    taken.yes = taken.no = 0;
    fc.assert(fc.property(objectOf({ start }), (body) => {
      agrees(CallStartReq, checkCallStart, body);
      agrees(CallStartV2Req, checkCallStart, body);
    }), RUNS);
    expect(Math.min(taken.yes, taken.no)).toBeGreaterThan(RUNS.numRuns / 20);
  });

  it("call/end and v2 call/end", () => {
    taken.yes = taken.no = 0;
    fc.assert(fc.property(objectOf({ end }), (body) => {
      agrees(CallEndReq, checkCallEnd, body);
      agrees(CallEndV2Req, checkCallEnd, body);
    }), RUNS);
    expect(Math.min(taken.yes, taken.no)).toBeGreaterThan(RUNS.numRuns / 20);
  });

  it("takes the bodies the SDKs send, and returns the parsed values in the schema's key order", () => {
    const body = {
      batch: [
        { mode: "start", req: { start: { started_at: "2026-11-21T10:00:00.123456Z", op_name: "op", project_id: "acme/p", attributes: { a: 1 }, inputs: {}, id: "c1", trace_id: "t1" } } },
        { mode: "end", req: { end: { project_id: "acme/p", summary: { zz: 1, usage: { m: { requests: 1, prompt_tokens: 2, extra: 3 } } }, id: "c1", ended_at: "2026-11-21T10:00:01Z", output: [1] } } },
      ],
    };
    const fast = checkCallCreateBatch(body);
    expect(fast).not.toBeNull();
    expect(JSON.stringify(fast)).toBe(JSON.stringify(CallCreateBatchReq.parse(body)));
    expect(Object.keys(fast!.batch[0]!.req)).toEqual(["start"]);
  });

  it("leaves what it does not take to the schema: unknown fields, refused values", () => {
    const start = { project_id: "acme/p", op_name: "op", started_at: "2026-11-21T10:00:00Z", attributes: {}, inputs: {} };
    expect(checkCallStart({ start })).not.toBeNull();
    expect(checkCallStart({ start: { ...start, extra: 1 } })).toBeNull();
    expect(checkCallStart({ start: { ...start, op_name: "" } })).toBeNull();
    expect(checkCallStart({ start: { ...start, wb_run_step: 1.5 } })).toBeNull();
    expect(checkCallStart({ start, more: 1 })).toBeNull();
    expect(checkCallCreateBatch({ batch: [{ mode: "other", req: { start } }] })).toBeNull();
  });
});
