import { beforeAll, describe, expect, it } from "vitest";
import { iso, serviceForFile } from "../support/service.js";

const service = serviceForFile();
const api = service.api;
const P = "acme/tokens";
const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);


/** A finished call with this summary. */
const finished = (id: string, i: number, summary: Record<string, unknown>) => [
  { mode: "start", req: { start: { project_id: P, id, op_name: "llm", trace_id: id, started_at: iso(T0 + i * 1000), attributes: {}, inputs: {} } } },
  { mode: "end", req: { end: { project_id: P, id, ended_at: iso(T0 + i * 1000 + 10), output: null, summary } } },
];

describe("summary.weave.total_tokens", () => {
  beforeAll(async () => {
    const batch = [
      // Two models with total_tokens: 30 + 12.
      ...finished("t-two-models", 0, { usage: { "gpt-4.1": { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 }, "o3-mini": { total_tokens: 12 } } }),
      // No total_tokens: prompt/input plus completion/output = 5 + 2 + 40.
      ...finished("t-parts", 1, { usage: { claude: { input_tokens: 5, output_tokens: 2 }, other: { prompt_tokens: 40 } } }),
      ...finished("t-small", 2, { usage: { "gpt-4o": { total_tokens: 3 } } }),
      ...finished("t-none", 3, { note: "no usage" }),
    ];
    await api.json("/call/upsert_batch", { batch });
  });

  const ids = async (body: Record<string, unknown>) =>
    (await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, columns: ["id"], ...body })).map((c) => c.id);

  it("sorts calls by their tokens over all models, calls without usage last either way", async () => {
    const by = (direction: string) => ids({ sort_by: [{ field: "summary.weave.total_tokens", direction }] });
    expect(await by("desc")).toEqual(["t-parts", "t-two-models", "t-small", "t-none"]);
    expect(await by("asc")).toEqual(["t-small", "t-two-models", "t-parts", "t-none"]);
  });

  it("filters on them", async () => {
    const field = { $getField: "summary.weave.total_tokens" };
    expect(await ids({ query: { $expr: { $gt: [field, { $literal: 40 }] } } })).toEqual(["t-two-models", "t-parts"]);
    expect(await ids({ query: { $expr: { $eq: [field, { $literal: 3 }] } } })).toEqual(["t-small"]);
  });
});
