import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Operation } from "../../services/contract/operation.js";
import { KEY_ACME, startTestService } from "../support/service.js";
import { Faults, rowOf, send } from "./hostile.js";

/**
 * A fixed corpus of known-nasty bodies, each sent to every mounted operation with a key that
 * reaches the project the operation's row names: every answer is a 2xx or a 4xx that says what
 * was wrong, never a 5xx, never a hang.
 */
const deepArray = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

type Path = (string | number)[];

/** Every value of the operation's valid body (not the body itself), as paths. */
function positionsOf(value: unknown, at: Path = []): Path[] {
  const inner = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : typeof value === "object" && value !== null ? Object.entries(value) : [];
  return inner.flatMap(([key, v]) => [[...at, key], ...positionsOf(v, [...at, key])]);
}

const MARK = "@@hostile@@";

function placed(body: unknown, path: Path): string {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path[path.length - 1]!] = MARK;
  return JSON.stringify(copy);
}

/** The operation's valid body with `raw` (JSON text or bytes) in place of the value at each position. */
function variants(op: Operation, raw: string | number[], limit: number): (string | Uint8Array)[] {
  const body = rowOf(op).body ?? { project_id: "acme/scoped", value: "x" };
  const all = positionsOf(body);
  // Free-form values (objects, e.g. inputs or payloads) first: there a value goes furthest.
  const paths = [...all.filter((p) => isObjectAt(body, p)), ...all.filter((p) => !isObjectAt(body, p))].slice(0, limit);
  return paths.map((path) => {
    const [head, tail] = placed(body, path).split(`"${MARK}"`) as [string, string];
    return typeof raw === "string" ? `${head}${raw}${tail}` : Buffer.concat([Buffer.from(head), Buffer.from(raw), Buffer.from(tail)]);
  });
}

function isObjectAt(body: unknown, path: Path): boolean {
  let node = body;
  for (const key of path) node = (node as Record<string | number, unknown>)[key];
  return typeof node === "object" && node !== null && !Array.isArray(node);
}

/** Whole bodies: one per operation. */
const BODIES: Record<string, string> = {
  "array nested 5,000 deep": deepArray(5000),
  "object nested 5,000 deep": deepObject(5000),
  "empty body": "",
  null: "null",
  "a bare string": '"x"',
  "an array": "[]",
  "truncated JSON": '{"project_id": "acme/scoped", "a": [1, 2',
  "two JSON values": '{"project_id": "acme/scoped"} {}',
  "trailing comma": '{"project_id": "acme/scoped",}',
  "single quotes": "{'project_id': 'acme/scoped'}",
};

/**
 * Places tried per operation (free-form objects first): every value of most bodies for strings
 * that reach queries, a few for the others, one for the bulky ones (the suite's time budget).
 */
const BIG = 1;
/** One entry over every operation; generous, as the machine is shared (figures in docs/benchmarks.md). */
const TIMEOUT_MS = 240_000;
const FEW = 4;
const EVERY = 12;

/** Values put in place of each value of an operation's valid body in turn (at most `limit` places). */
const VALUES: Record<string, { raw: string | number[]; limit: number }> = {
  "nested 5,000 deep": { raw: deepObject(5000), limit: FEW },
  "nested 300 deep": { raw: deepArray(300), limit: FEW },
  "nested 200 deep": { raw: deepObject(200), limit: FEW },
  "invalid UTF-8 (lone continuation byte)": { raw: [0x22, 0x80, 0x22], limit: FEW },
  "invalid UTF-8 (truncated sequence)": { raw: [0x22, 0x61, 0xe2, 0x82, 0x22], limit: FEW },
  "invalid UTF-8 (overlong NUL)": { raw: [0x22, 0xc0, 0x80, 0x22], limit: FEW },
  "invalid UTF-8 (encoded surrogate)": { raw: [0x22, 0xed, 0xa0, 0x80, 0x22], limit: FEW },
  "lone surrogate escape": { raw: '"\\ud800"', limit: EVERY },
  "NUL escape": { raw: '"a\\u0000b"', limit: EVERY },
  NaN: { raw: "NaN", limit: FEW },
  Infinity: { raw: "Infinity", limit: FEW },
  "-Infinity": { raw: "-Infinity", limit: FEW },
  "number past float range": { raw: "1e400", limit: FEW },
  "integer of 400 digits": { raw: "9".repeat(400), limit: FEW },
  "negative zero": { raw: "-0.0", limit: FEW },
  "unknown $ operator": { raw: '{"$where": ["1"]}', limit: EVERY },
  "__proto__ key": { raw: '{"__proto__": {"polluted": true}}', limit: FEW },
  "SQL in a string": { raw: JSON.stringify("x'); DROP TABLE calls; --"), limit: EVERY },
  "ClickHouse escapes in a string": { raw: JSON.stringify("\\' \\\\ ` {pb_0:String} \u0000 \\x00"), limit: EVERY },
  "string of 1 MiB": { raw: JSON.stringify("x".repeat(1024 * 1024)), limit: BIG },
  "array of 200,000 numbers": { raw: `[${new Array(200_000).fill("0").join(",")}]`, limit: BIG },
  "object of 20,000 keys": { raw: JSON.stringify(Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]))), limit: BIG },
};
describe("a fixed corpus of hostile bodies, to every operation", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service.stop());

  const withBody = () => service.operations.filter((o) => o.method !== "get");
  const sendTo = async (faults: Faults, op: Operation, what: string, body: string | Uint8Array) => {
    const row = rowOf(op);
    const path = (row.path ?? op.path).replace(/\{(model|job)_id\}/g, "none");
    faults.check(op, what, await send(service.url, op, { path, body, headers: row.headers, key: KEY_ACME }));
  };

  for (const [name, body] of Object.entries(BODIES)) {
    it(`the body ${name}: no 5xx`, async () => {
      const faults = new Faults();
      for (const op of withBody()) await sendTo(faults, op, name, body);
      expect(faults.found).toEqual([]);
    }, TIMEOUT_MS);
  }
  for (const [name, { raw, limit }] of Object.entries(VALUES)) {
    it(`a value ${name}, in each place of a valid body: no 5xx`, async () => {
      const faults = new Faults();
      for (const op of withBody()) for (const [i, body] of variants(op, raw, limit).entries()) await sendTo(faults, op, `${name} #${i}`, body);
      expect(faults.found).toEqual([]);
    }, TIMEOUT_MS);
  }
});
