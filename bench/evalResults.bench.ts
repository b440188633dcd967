/**
 * eval_results benchmark (issue 11, "Tests and speed"). Run: `npx tsx bench/evalResults.bench.ts`
 * (or `make bench`).
 *
 * Starts its own ClickHouse and a service process; logs 2 evaluations × 1,000 dataset rows ×
 * 3 scorers the way the Weave SDKs log an Evaluation (through `/call/upsert_batch`, the queue
 * and the worker): per row an `Evaluation.predict_and_score` call naming its dataset row by
 * ref, under it the model's call (with token usage) and 3 scorer calls; 10,002 calls in all.
 * Then measures, over BENCH_RUNS (30) runs each through HTTP, `POST /v2/{e}/{p}/eval_results/query`
 * over both evaluations: the first page of 100 rows with the summary; every row (2,000 trials)
 * with the summary; and one evaluation sorted by a score. Goal: p50 ≤ 200 ms.
 */
import { trialCallsQuery, trialChildrenQuery, type RootPlace } from "../services/store/evalResults/evalResultsQuery.js";
import { ensureDatabase } from "../services/store/migrations.js";
import { renderSql, type BuiltQuery } from "../services/store/sql.js";
import { BENCH_AUTH, clickhouseClientMs, printTable, spawnService, startBenchClickHouse, stats, timeIt } from "./support.js";

const ROWS = Number(process.env.BENCH_EVAL_ROWS ?? 1000);
const EVALUATIONS = 2;
const SCORERS = ["exact", "f1", "judge"];
const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const PROJECT = "bench/evals";
const DATABASE = "bench_evals";
const PARTS_PER_REQUEST = 1000;
const BASE_MS = Date.UTC(2026, 10, 1);
const sqlOf = (q: BuiltQuery) => renderSql(q.sql, q.params);

const post = async (url: string, path: string, body: unknown): Promise<unknown> => {
  const res = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: BENCH_AUTH }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as unknown;
};

const ref = (kind: string, name: string) => `weave:///${PROJECT}/${kind}/${name}:v1`;
const at = (base: number, ms: number) => new Date(base + ms).toISOString();

/** The parts of one evaluation's calls: its root, then per row a predict_and_score with its model and scorer calls. */
function evaluationParts(e: number, base: number): unknown[] {
  const parts: unknown[] = [];
  const root = `eval-${e}`;
  const model = ref("object", `model-${e}`);
  const evaluation = ref("object", "qa-eval");
  const call = (id: string, parent: string | null, op: string, inputs: Record<string, unknown>, output: unknown, start: number, ms: number, summary: Record<string, unknown> = {}) => {
    parts.push({ mode: "start", req: { start: { project_id: PROJECT, id, trace_id: root, parent_id: parent, op_name: op, started_at: at(base, start), attributes: {}, inputs } } });
    parts.push({ mode: "end", req: { end: { project_id: PROJECT, id, ended_at: at(base, start + ms), output, summary } } });
  };
  call(root, null, ref("op", "Evaluation.evaluate"), { self: evaluation, model }, { done: true }, 0, ROWS * 10 + 10);
  for (let r = 0; r < ROWS; r++) {
    const pas = `pas-${e}-${r}`;
    const start = 1 + r * 10;
    const example = `${ref("object", "qa")}/attr/rows/id/row-${String(r).padStart(5, "0")}`;
    const answer = `answer ${(r * (e + 3)) % 17}`;
    const scores = { exact: (r + e) % 3 === 0, f1: ((r * 7 + e) % 100) / 100, judge: { passed: (r + e) % 2 === 0, score: ((r * 13) % 10) / 10 } };
    call(pas, root, ref("op", "Evaluation.predict_and_score"), { self: evaluation, model, example }, { output: answer, scores, model_latency: 0.2 }, start, 8);
    call(`model-${e}-${r}`, pas, ref("op", "Model.predict"), { self: model, example }, answer, start + 1, 3, { usage: { "gpt-4o-mini": { prompt_tokens: 40 + (r % 9), completion_tokens: 12, total_tokens: 52 + (r % 9), requests: 1 } } });
    SCORERS.forEach((s, i) => call(`${s}-${e}-${r}`, pas, ref("op", s), { output: answer, example }, scores[s as keyof typeof scores], start + 4 + i, 1));
  }
  return parts;
}

async function seed(url: string): Promise<number> {
  const parts = Array.from({ length: EVALUATIONS }, (_, e) => evaluationParts(e, BASE_MS + e * 3_600_000)).flat();
  for (let i = 0; i < parts.length; i += PARTS_PER_REQUEST) await post(url, "/call/upsert_batch", { batch: parts.slice(i, i + PARTS_PER_REQUEST) });
  const expected = parts.length / 2;
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { count } = (await post(url, "/calls/query_stats", { project_id: PROJECT })) as { count: number };
    if (count >= expected) return count;
    if (Date.now() > deadline) throw new Error(`only ${count} of ${expected} calls stored`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("evals");
  const { ch, dir } = bench;
  await ensureDatabase(ch.url, DATABASE);
  const service = await spawnService({ CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: DATABASE, DATA_DIR: dir });
  try {
    const calls = await seed(service.url);
    console.log(`seeded ${calls} calls: ${EVALUATIONS} evaluations × ${ROWS} rows × ${SCORERS.length} scorers (ClickHouse data: ${bench.filesystem})`);
    const ids = Array.from({ length: EVALUATIONS }, (_, e) => `eval-${e}`);
    const path = `/v2/${PROJECT}/eval_results/query`;
    const cases: [string, Record<string, unknown>][] = [
      ["2 evaluations, first 100 rows + summary", { evaluation_call_ids: ids, include_summary: true, limit: 100 }],
      ["2 evaluations, all rows + summary", { evaluation_call_ids: ids, include_summary: true }],
      ["1 evaluation, sorted by judge.score, 50 rows", { evaluation_call_ids: [ids[0]], sort_by: [{ field: "scores.judge.score", direction: "desc" }], limit: 50 }],
    ];
    const check = (await post(service.url, path, cases[1]![1])) as { total_rows: number; summary: { evaluations: { trial_count: number }[] } };
    if (check.total_rows !== ROWS || check.summary.evaluations.some((e) => e.trial_count !== ROWS)) throw new Error(`unexpected answer: ${JSON.stringify(check).slice(0, 300)}`);
    const rows = [];
    for (const [name, body] of cases) {
      await post(service.url, path, body);
      const s = stats(await timeIt(RUNS, () => post(service.url, path, body)));
      rows.push({ query: name, "p50 ms": s.p50.toFixed(1), "p99 ms": s.p99.toFixed(1), runs: RUNS });
    }
    // The two reads the service makes (in parallel), alone in clickhouse-client: what is left is the service's share.
    const roots: RootPlace[] = ids.map((id, e) => ({ id, trace_id: id, started_at: (BASE_MS + e * 3_600_000) * 1000 }));
    for (const [name, q] of [["SQL: the trials (clickhouse-client)", trialCallsQuery(PROJECT, roots)], ["SQL: their children (clickhouse-client)", trialChildrenQuery(PROJECT, roots)]] as const) {
      const s = stats(clickhouseClientMs(bench.ch.tcpPort, DATABASE, sqlOf(q), RUNS));
      rows.push({ query: name, "p50 ms": s.p50.toFixed(1), "p99 ms": s.p99.toFixed(1), runs: RUNS });
    }
    printTable(`eval_results over ${EVALUATIONS} × ${ROWS} rows × ${SCORERS.length} scorers (HTTP end to end; goal p50 ≤ 200 ms)`, rows);
  } finally {
    await service.stop();
    await bench.stop();
  }
}

await main();
