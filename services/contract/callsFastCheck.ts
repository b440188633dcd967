import type { z } from "zod";
import { isJsonObject } from "../json.js";
import { isoToMicros } from "../times.js";
import { END_BODY, START_BODY, type BodyField, type BodyValue } from "./callFields.js";
import { USAGE_KEYS, type CallCreateBatchReq, type CallEndReq, type CallStartReq } from "./calls.js";

/**
 * The ingest bodies checked by hand, for the hot path: zod's walk of an `upsert_batch` of 500
 * parts costs more CPU than parsing its JSON. Each function answers what the zod schema's
 * `parse` answers for a body it takes: the same values, keys in the same order (known keys in
 * the schema's order, then a passthrough object's other keys). Where that is the input as it
 * is (the SDKs send the fields in the schema's order), the input itself is answered instead of
 * a copy. Anything else gives null: a body the schema refuses, a field the schema does not
 * know (zod strips it, and the service names it in `X-Ignored-Fields`), anything unusual.
 * Null sends the body to the schema, which stays the contract and writes the errors. Checked
 * against the schemas in test/contract/callsFastCheck.test.ts.
 */

type Fields = Record<string, unknown>;

/** A field's value as the schema answers it (the value itself when unchanged); undefined when refused. */
type Parse = (v: unknown) => unknown;

const isPlainObject = (v: unknown): v is Fields => isJsonObject(v) && Object.getPrototypeOf(v) === Object.prototype;
const when = (ok: (v: unknown) => boolean): Parse => (v) => (ok(v) ? v : undefined);

const PROJECT_ID = /^[^/\s]+\/[^/\s]+$/;
/** The last project id taken: a batch names one project hundreds of times. */
let lastProjectId = "";
const projectId = when((v) => {
  if (typeof v !== "string") return false;
  if (v === lastProjectId) return true;
  if (!PROJECT_ID.test(v)) return false;
  lastProjectId = v;
  return true;
});
const string = (min: number, max: number) => when((v) => typeof v === "string" && v.length >= min && v.length <= max);
const anyString = when((v) => typeof v === "string");
const datetime = when((v) => typeof v === "string" && isoToMicros(v) !== null);
const int = when((v) => Number.isSafeInteger(v));
const jsonObject = when((v) => isJsonObject(v));
const bool = when((v) => typeof v === "boolean");
const anyValue: Parse = (v) => v;
const nullish = (parse: Parse): Parse => (v) => (v === null ? null : parse(v));

/** An object schema's fields in its order, as parallel arrays (the loops below are the hot path). */
interface Shape {
  readonly keys: readonly string[];
  readonly parses: readonly Parse[];
  /** The schema lets the field be absent (`nullish`, `optional`). */
  readonly optional: readonly boolean[];
  readonly known: ReadonlySet<string>;
  /** `passthrough`: the other keys are kept, after the known ones; else they refuse the input (zod would strip them). */
  readonly passthrough: boolean;
}

type FieldSpec = readonly [key: string, parse: Parse, optional?: "optional"];

function shapeOf(fields: readonly FieldSpec[], passthrough = false): Shape {
  return {
    keys: fields.map(([key]) => key),
    parses: fields.map(([, parse]) => parse),
    optional: fields.map(([, , optional]) => optional === "optional"),
    known: new Set(fields.map(([key]) => key)),
    passthrough,
  };
}

/**
 * `input` as the object schema answers it, undefined when refused (or unusual: an own
 * `undefined`, a `__proto__` key). The input itself when the answer holds the same keys in the
 * same order with the same values; else a copy in the schema's order.
 */
function object(input: unknown, shape: Shape): unknown {
  if (!isPlainObject(input)) return undefined;
  const { keys, parses } = shape;
  let found = 0;
  let changed = false;
  for (let i = 0; i < keys.length; i++) {
    // No shape key is a property of Object.prototype: undefined means absent (or an own undefined, refused below).
    const value = input[keys[i]!];
    if (value === undefined) {
      if (!shape.optional[i]) return undefined;
      continue;
    }
    const parsed = parses[i]!(value);
    if (parsed === undefined) return undefined;
    if (parsed !== value) changed = true;
    found++;
  }
  // The input's own keys: the known ones must come in the shape's order, before any other.
  let own = 0;
  let next = 0;
  let others = false;
  for (const key in input) {
    own++;
    if (key === "__proto__") return undefined;
    let at = others ? keys.length : next;
    while (at < keys.length && keys[at] !== key) at++;
    if (at < keys.length) {
      next = at + 1;
      continue;
    }
    if (!shape.known.has(key)) {
      if (!shape.passthrough || input[key] === undefined) return undefined;
      others = true;
      found++;
    } else {
      changed = true; // out of order
    }
  }
  // An own key the loop over the shape did not count holds undefined.
  if (own !== found) return undefined;
  return changed ? copyInOrder(input, shape) : input;
}

function copyInOrder(input: Fields, shape: Shape): Fields {
  const out: Fields = {};
  for (let i = 0; i < shape.keys.length; i++) {
    const key = shape.keys[i]!;
    if (input[key] !== undefined) out[key] = shape.parses[i]!(input[key]);
  }
  for (const key in input) if (!shape.known.has(key)) out[key] = input[key];
  return out;
}

/** `z.record(z.string(), item)`: the input itself when every value is its own answer, else a copy. */
function record(item: Parse): Parse {
  return (input) => {
    if (!isPlainObject(input)) return undefined;
    let changed = false;
    for (const key in input) {
      if (key === "__proto__") return undefined;
      const value = input[key];
      const parsed = value === undefined ? undefined : item(value);
      if (parsed === undefined) return undefined;
      if (parsed !== value) changed = true;
    }
    if (!changed) return input;
    const out: Fields = {};
    for (const key in input) out[key] = item(input[key]);
    return out;
  };
}

// LLMUsage, passthrough.
const USAGE = shapeOf(
  USAGE_KEYS.map((key): FieldSpec => [key, nullish(int), "optional"]),
  true,
);

// CallSummary, passthrough.
const SUMMARY = shapeOf(
  [
    ["usage", nullish(record((v) => object(v, USAGE))), "optional"],
    ["status_counts", nullish(record(int)), "optional"],
  ],
  true,
);

/** How a body's field is checked (contract/callFields.ts): what BODY_ZOD in calls.ts accepts, the value itself. */
const BODY_PARSE: Record<BodyValue, Parse> = {
  project_id: projectId,
  id: string(1, 512),
  op_name: string(1, 2048),
  display_name: string(0, 2048),
  text: anyString,
  user: anyString,
  datetime,
  int,
  json_object: jsonObject,
  json: anyValue,
  summary: (v) => object(v, SUMMARY),
  bool,
};

/** A body's shape from its list, in its order. */
function bodyShape(body: readonly BodyField[]): Shape {
  return shapeOf(
    body.map(([key, value, presence]): FieldSpec => {
      const parse = BODY_PARSE[value];
      return presence === "required" ? [key, parse] : [key, presence === "nullish" ? nullish(parse) : parse, "optional"];
    }),
  );
}

const START = bodyShape(START_BODY);
const END = bodyShape(END_BODY);

const START_REQ = shapeOf([["start", (v) => object(v, START)]]);
const END_REQ = shapeOf([["end", (v) => object(v, END)]]);
const START_ITEM = shapeOf([["mode", anyValue], ["req", (v) => object(v, START_REQ)]]);
const END_ITEM = shapeOf([["mode", anyValue], ["req", (v) => object(v, END_REQ)]]);

function batchItem(input: unknown): unknown {
  if (!isPlainObject(input)) return undefined;
  if (input.mode === "start") return object(input, START_ITEM);
  if (input.mode === "end") return object(input, END_ITEM);
  return undefined;
}

const MAX_BATCH = 10_000;

function batch(input: unknown): unknown {
  if (!Array.isArray(input) || input.length > MAX_BATCH) return undefined;
  let changed = false;
  for (let i = 0; i < input.length; i++) {
    const item: unknown = input[i];
    const parsed = batchItem(item);
    if (parsed === undefined) return undefined;
    if (parsed !== item) changed = true;
  }
  return changed ? input.map(batchItem) : input;
}

const BATCH_REQ = shapeOf([["batch", batch]]);

type Output<S extends z.ZodType> = z.output<S>;

/** `CallCreateBatchReq.parse(body)` when the check takes the body, else null. */
export function checkCallCreateBatch(body: unknown): Output<typeof CallCreateBatchReq> | null {
  return (object(body, BATCH_REQ) ?? null) as Output<typeof CallCreateBatchReq> | null;
}

/** `CallStartReq.parse(body)` when the check takes the body, else null (also for the v2 route's identical schema). */
export function checkCallStart(body: unknown): Output<typeof CallStartReq> | null {
  return (object(body, START_REQ) ?? null) as Output<typeof CallStartReq> | null;
}

/** `CallEndReq.parse(body)` when the check takes the body, else null (also for the v2 route's identical schema). */
export function checkCallEnd(body: unknown): Output<typeof CallEndReq> | null {
  return (object(body, END_REQ) ?? null) as Output<typeof CallEndReq> | null;
}
