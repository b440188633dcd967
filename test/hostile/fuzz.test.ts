import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Operation } from "../../services/contract/operation.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { storeOn } from "../support/database.js";
import { client, KEY_ACME, KEY_ADMIN, startTestService } from "../support/service.js";
import { faultOf, rowOf, send } from "./hostile.js";

/**
 * Random and adversarial requests to every operation the service mounts (enumerated from
 * the service, so a new route is covered without a change here): each starts from the
 * operation's valid request (test/http/operationRequests.ts) and has some of its values, path
 * segments and query values replaced by SQL metacharacters, ClickHouse escapes, wrong types,
 * random JSON, query expressions with hostile `$getField` paths, `$literal`s and unknown
 * operators, and hostile sort fields. Sent with a key of entity `acme` only. Each answer is
 * a 2xx or a 4xx with a message; afterwards no table changed shape, the canary project of
 * another entity reads as before, and no row of any table names a project outside `acme`.
 */
const RUNS_PER_OPERATION = Number(process.env.HOSTILE_RUNS ?? 8);
const CANARY = "other/canary";

const NASTY = [
  "'",
  "\\'",
  "\\\\",
  "\\",
  "'); DROP TABLE calls; --",
  "' OR 1=1 --",
  "\\'; SELECT 1; --",
  "`",
  "`calls`",
  "{pb_0:String}",
  "{",
  "}",
  "\0",
  "a\0b",
  "\n\r\t",
  "%",
  "_",
  "acme/scoped' OR project_id != '",
  "other/canary",
  "../other/canary",
  "inputs.a'].b",
  "summary.weave.total_tokens",
  "$expr",
  "é😀\u202e",
  "x".repeat(5000),
];

const nastyString = fc.oneof(fc.constantFrom(...NASTY), fc.string({ unit: "binary", maxLength: 40 }), fc.string({ maxLength: 8 }).map((s) => `${s}'\\`));
const wrongType = fc.constantFrom<unknown>(null, 0, -1, 1.5, 1e308, -0, true, false, [], {}, [null], { $literal: 1 }, "");
const expr: fc.Arbitrary<unknown> = fc.letrec<{ e: unknown }>((tie) => ({
  e: fc.oneof(
    { depthSize: "small" },
    nastyString.map((s) => ({ $getField: s })),
    nastyString.map((s) => ({ $literal: s })),
    fc.jsonValue({ maxDepth: 2 }).map((v) => ({ $literal: v })),
    fc.tuple(fc.constantFrom("$eq", "$gt", "$gte", "$in", "$contains", "$and", "$or", "$not", "$where", "$regex", "$sql", "$getField", "$literal", "$convert"), fc.array(tie("e"), { maxLength: 3 })).map(([op, args]) => ({ [op]: args })),
    fc.record({ $contains: fc.record({ input: tie("e"), substr: tie("e"), case_insensitive: fc.boolean() }) }),
    fc.record({ $convert: fc.record({ input: tie("e"), to: fc.oneof(nastyString, fc.constantFrom("int", "double", "string", "bool")) }) }),
  ),
})).e;
const query = expr.map((e) => ({ $expr: e }));
const sortBy = fc.array(fc.record({ field: nastyString, direction: fc.oneof(fc.constantFrom("asc", "desc"), nastyString) }), { maxLength: 3 });

/** A value put in place of one of the body's: what a value of that key can be made into. */
function hostileValueFor(key: string | number): fc.Arbitrary<unknown> {
  const generic = fc.oneof(nastyString, wrongType, fc.jsonValue({ maxDepth: 3 }), query);
  if (key === "project_id") return fc.oneof(nastyString.map((s) => `acme/${s}`), nastyString);
  if (key === "query" || key === "filter") return fc.oneof(query, generic);
  if (key === "sort_by") return fc.oneof(sortBy, generic);
  return generic;
}

type Path = (string | number)[];

function positionsOf(value: unknown, at: Path = []): Path[] {
  const inner = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : typeof value === "object" && value !== null ? Object.entries(value) : [];
  return inner.flatMap(([key, v]) => [[...at, key], ...positionsOf(v, [...at, key])]);
}

function replaced(body: unknown, path: Path, value: unknown): unknown {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== "object" || next === null) return copy; // an earlier replacement took the parent away
    node = next as Record<string | number, unknown>;
  }
  node[path[path.length - 1]!] = value;
  return copy;
}

/** Extra top-level fields every query-like operation reads (and the others ignore). */
const extras = fc.record({ query, sort_by: sortBy, filter: fc.record({ op_names: fc.array(nastyString, { maxLength: 2 }), trace_ids: fc.array(nastyString, { maxLength: 2 }), call_ids: fc.array(nastyString, { maxLength: 2 }) }), columns: fc.array(nastyString, { maxLength: 3 }), limit: fc.oneof(fc.nat(), wrongType), offset: fc.oneof(fc.nat(), wrongType) }, { requiredKeys: [] });

interface Mutation {
  readonly body: unknown;
  readonly path: string;
}

function mutationsOf(op: Operation): fc.Arbitrary<Mutation> {
  const row = rowOf(op);
  const base = row.body ?? (op.method === "get" ? undefined : {});
  const positions = base === undefined ? [] : positionsOf(base);
  const replacement = positions.length === 0 ? fc.constant([] as [Path, unknown][]) : fc.array(fc.constantFrom(...positions).chain((p) => hostileValueFor(p[p.length - 1]!).map((v) => [p, v] as [Path, unknown])), { minLength: 1, maxLength: 3 });
  const path = hostilePath(row.path ?? op.path, op.path);
  return fc.record({ replacements: replacement, extra: fc.option(extras, { freq: 3 }), path }).map(({ replacements, extra, path }) => {
    let body: unknown = base;
    for (const [at, value] of replacements) body = replaced(body, at, value);
    if (extra && typeof body === "object" && body !== null && !Array.isArray(body)) body = { ...body, ...extra };
    return { body, path };
  });
}

/**
 * The request path with its parameter segments (but the entity, which the key must reach) and
 * its query values possibly replaced by hostile strings.
 */
function hostilePath(path: string, template: string): fc.Arbitrary<string> {
  const [route, search] = path.replace(/\{(model|job)_id\}/g, "none").split("?") as [string, string | undefined];
  const segments = route.split("/");
  const params = template.split("/").map((s) => /^\{\w+\}$/.test(s) && s !== "{entity}");
  const segment = (s: string, i: number) => (!params[i] ? fc.constant(s) : fc.oneof({ weight: 2, arbitrary: fc.constant(s) }, { weight: 1, arbitrary: nastyString.map(encodeURIComponent) }, { weight: 1, arbitrary: fc.constantFrom("%E0%A4%A", "%", "%00", "..", "%2F..%2F") }));
  const values = [...new URLSearchParams(search ?? "")].map(([k, v]) => fc.oneof(fc.constant(v), nastyString.map((s) => (k === "project_id" ? `acme/${s}` : s))).map((value) => [k, value] as [string, string]));
  return fc.tuple(fc.tuple(...segments.map(segment)), fc.tuple(...values)).map(([parts, query]) => `${parts.join("/")}${query.length > 0 ? `?${new URLSearchParams(query).toString()}` : ""}`);
}

describe("random hostile requests to every operation", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  let store: ClickHouseStore;
  const canaryBefore: unknown[] = [];

  const tableShapes = () => store.rows<{ table: string; name: string; type: string }>("hostile_shapes", { sql: `SELECT table, name, type FROM system.columns WHERE database = currentDatabase() ORDER BY table, name`, params: {} });

  async function canaryView(): Promise<unknown[]> {
    const admin = client(service.url, KEY_ADMIN);
    return [
      await admin.lines("/calls/stream_query", { project_id: CANARY }),
      await admin.json("/objs/query", { project_id: CANARY }),
      await admin.json("/feedback/query", { project_id: CANARY }),
    ];
  }

  beforeAll(async () => {
    service = await startTestService();
    store = await storeOn(service.database);
    const admin = client(service.url, KEY_ADMIN);
    const start = { project_id: CANARY, id: "canary-call", trace_id: "canary-trace", op_name: "canary", started_at: "2026-11-21T10:00:00.000000Z", attributes: {}, inputs: { secret: "canary" } };
    await admin.json("/call/upsert_batch", { batch: [{ mode: "start", req: { start } }, { mode: "end", req: { end: { project_id: CANARY, id: "canary-call", ended_at: "2026-11-21T10:00:01.000000Z", summary: {}, output: "canary" } } }] });
    await admin.json("/obj/create", { obj: { project_id: CANARY, object_id: "canary-object", val: { secret: "canary" } } });
    await admin.json("/feedback/create", { project_id: CANARY, weave_ref: `weave:///${CANARY}/call/canary-call`, feedback_type: "custom", payload: { secret: "canary" } });
    canaryBefore.push(await tableShapes(), ...(await canaryView()));
  });
  afterAll(async () => {
    await store?.close();
    await service?.stop();
  });

  it("every answer is a 2xx or a 4xx with a message, never a hang", async () => {
    const faults: string[] = [];
    for (const op of service.operations.filter((o) => o.scope.kind !== "public")) {
      const row = rowOf(op);
      await fc.assert(
        fc.asyncProperty(mutationsOf(op), async ({ body, path }) => {
          const text = body === undefined ? undefined : JSON.stringify(body);
          const answer = await send(service.url, op, { path, body: row.form ? undefined : text, headers: row.headers, key: KEY_ACME });
          const fault = faultOf(op, `${path} ${text?.slice(0, 300) ?? ""}`, answer);
          if (fault !== null) faults.push(fault);
          return fault === null;
        }),
        { numRuns: RUNS_PER_OPERATION, endOnFailure: true },
      ).catch(() => undefined); // every fault is in `faults`, reported below for all operations at once
    }
    expect(faults).toEqual([]);
  }, 600_000);

  it("afterwards no table changed shape, the other entity's canary reads as before, and nothing names a project outside acme", async () => {
    expect([await tableShapes(), ...(await canaryView())]).toEqual(canaryBefore);
    const tables = [...new Set((await tableShapes()).filter((c) => c.name === "project_id").map((c) => c.table))];
    expect(tables.length).toBeGreaterThan(5);
    const foreign: string[] = [];
    for (const table of tables) {
      if (!/^[A-Za-z0-9_.]+$/.test(table)) throw new Error(`unexpected table name ${table}`);
      const rows = await store.rows<{ project_id: string }>("hostile_projects", { sql: `SELECT DISTINCT project_id FROM ${table}`, params: {} });
      for (const { project_id } of rows) if (!project_id.startsWith("acme/") && project_id !== CANARY && project_id !== "") foreign.push(`${table}: ${project_id}`);
    }
    expect(foreign).toEqual([]);
  });
});
