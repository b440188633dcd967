/**
 * The inputs and output a span's attributes repeat, stored once (store/calls/ioCopies.ts):
 * GenAI spans exported by the OpenTelemetry JS SDK read back with their attributes whole, in
 * every read (a page, some columns only, one call, a call the worker writes again); filters,
 * sorts and searches on those attributes answer as before; the row holds a mark in place of
 * each copy written exactly, and keeps a copy written with spaces as it came.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ParamBuilder } from "../../services/store/sql.js";
import { storeOn } from "../support/database.js";
import { serviceForFile } from "../support/service.js";
import { exportSdkSpans } from "./httpSupport.js";

type Call = { id: string; op_name: string; display_name: string | null; attributes: Record<string, unknown>; inputs: unknown; output: unknown };

const P = "acme/io-copies";
const service = serviceForFile();
const api = service.api;

const question = (n: number) => [{ role: "user", content: `Plan trip ${n} to Lyon, "by train"` }];
const answer = (n: number) => [{ role: "assistant", content: `Take the TGV ${6600 + n} at 07:56\nand stay near Part-Dieu.` }];
const TOOL_ARGS = { to: "Lyon", day: "2026-01-12", passengers: 1 };

/** Each span's attributes as exported: two chats (JSON written compactly), a tool (OpenInference), and a chat from a Python client (spaces after the separators). */
const SPANS: Record<string, Record<string, string>> = {
  chat1: { "gen_ai.operation.name": "chat", "gen_ai.input.messages": JSON.stringify(question(1)), "gen_ai.output.messages": JSON.stringify(answer(1)) },
  chat2: { "gen_ai.operation.name": "chat", "gen_ai.input.messages": JSON.stringify(question(2)), "gen_ai.output.messages": JSON.stringify(answer(2)) },
  tool: { "input.value": JSON.stringify(TOOL_ARGS), "output.value": JSON.stringify({ trains: ["TGV 6601", "TGV 6605"] }) },
  spaced: { "gen_ai.operation.name": "chat", "gen_ai.input.messages": JSON.stringify(question(3)).replaceAll('","', '", "').replaceAll('":"', '": "') },
};
/** `attributes.otel.attributes` of a span, dotted keys nested. */
function nested(flat: Record<string, string>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split(".");
    let node = root;
    for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
    node[parts.at(-1)!] = value;
  }
  return root;
}

async function exportSpans(): Promise<Record<string, string>> {
  const names = Object.keys(SPANS);
  const spanIds = await exportSdkSpans(service.url, P, { "service.name": "planner" }, { name: "io-copies.test", version: "1.0.0" }, names.map((name) => ({ name, attributes: SPANS[name]! })));
  return Object.fromEntries(names.map((name, i) => [name, spanIds[i]!]));
}

const query = (body: Record<string, unknown>) => api.lines<Call>("/calls/stream_query", { project_id: P, ...body });
const field = (path: string) => ({ $getField: path });
const literal = (value: string) => ({ $literal: value });
const namesWhere = async (expr: Record<string, unknown>) => (await query({ query: { $expr: expr } })).map((c) => c.op_name).sort();
const spanAttributes = (call: Call) => (call.attributes["otel"] as { attributes: unknown }).attributes;

let ids: Record<string, string> = {};

beforeAll(async () => {
  ids = await exportSpans();
});

describe("the inputs and output a span's attributes repeat, stored once", () => {
  it("reads every span's attributes back whole, in a page, some columns, and one call", async () => {
    const calls = await query({});
    expect(calls.map((c) => c.op_name).sort()).toEqual(Object.keys(SPANS).sort());
    for (const call of calls) expect(spanAttributes(call)).toEqual(nested(SPANS[call.op_name]!));
    expect(calls.find((c) => c.op_name === "chat1")!.inputs).toEqual({ value: question(1) });
    const some = await query({ columns: ["attributes"] });
    for (const call of some) {
      expect(spanAttributes(call)).toEqual(nested(SPANS[call.op_name]!));
      expect(call.inputs ?? null).toBeNull();
    }
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: ids["tool"] });
    expect(spanAttributes(call)).toEqual(nested(SPANS["tool"]!));
  });

  it("filters, sorts and searches on those attributes as before", async () => {
    expect(await namesWhere({ $eq: [field("attributes.otel.attributes.gen_ai.input.messages"), literal(JSON.stringify(question(2)))] })).toEqual(["chat2"]);
    expect(await namesWhere({ $contains: { input: field("attributes"), substr: literal(String.raw`\"content\":\"Take the TGV 6601`) } })).toEqual(["chat1"]);
    expect(await namesWhere({ $contains: { input: field("attributes"), substr: literal(String.raw`07:56\\nand stay near Part-Dieu.\"}]"}}}`) } })).toEqual(["chat1", "chat2"]);
    expect(await namesWhere({ $contains: { input: field("attributes"), substr: literal(String.raw`{\"to\":\"Lyon\"`) } })).toEqual(["tool"]);
    expect(await namesWhere({ $contains: { input: field("attributes"), substr: literal(String.raw`\"role\": \"user\"`) } })).toEqual(["spaced"]);
    expect(await namesWhere({ $contains: { input: field("attributes"), substr: literal('"service":{"name":"planner"}') } })).toEqual(Object.keys(SPANS).sort());
    const sorted = await query({ query: { $expr: { $eq: [field("attributes.operation"), literal("chat")] } }, sort_by: [{ field: "attributes.otel.attributes.gen_ai.output.messages", direction: "desc" }] });
    expect(sorted.map((c) => c.op_name)).toEqual(["chat2", "chat1", "spaced"]);
  });

  it("stores a mark in place of each copy written exactly, and a copy written otherwise as it came", async () => {
    const store = await storeOn(service.database);
    try {
      const pb = new ParamBuilder();
      const rows = await store.rows<{ op_name: string; attributes: string }>("test_io_copies", {
        sql: `SELECT op_name, attributes FROM calls WHERE project_id = ${pb.str(P)} ORDER BY op_name`,
        params: pb.params,
      });
      const marks = Object.fromEntries(rows.map((r) => [r.op_name, r.attributes.match(/\u0001./g) ?? []]));
      expect(marks).toEqual({ chat1: ["\u0001V", "\u0001O"], chat2: ["\u0001V", "\u0001O"], tool: ["\u0001I", "\u0001O"], spaced: [] });
      expect(rows.find((r) => r.op_name === "chat1")!.attributes).not.toContain("Lyon");
      expect(rows.find((r) => r.op_name === "spaced")!.attributes).toContain("Lyon");
    } finally {
      await store.close();
    }
  });

  it("keeps them when the worker writes a span's call again", async () => {
    expect(await api.json("/call/update", { project_id: P, call_id: ids["chat1"], display_name: "renamed" })).toEqual({});
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: ids["chat1"] });
    expect(call.display_name).toBe("renamed");
    expect(spanAttributes(call)).toEqual(nested(SPANS["chat1"]!));
    expect(call.output).toEqual(answer(1));
  });
});
