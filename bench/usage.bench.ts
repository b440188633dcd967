/**
 * /calls/usage benchmark (issue: analytics, Speed): a 1,000-call trace inside a project of
 * 100,000 other calls, through HTTP end to end. Prints p50/p99 over 20 runs for the root of
 * the trace, without and with costs, and /trace/usage for the same trace; goal p50 ≤ 100 ms.
 *
 *   npx tsx bench/usage.bench.ts        (BENCH_BACKGROUND_CALLS to change the 100,000)
 *
 * Starts its own ClickHouse in a temporary directory and the service in this process;
 * stops both and removes the directory at the end.
 */
import { loadConfig } from "../services/config.js";
import { startService, type RunningService } from "../services/service.js";
import { ClickHouseStore } from "../services/store/clickhouse.js";
import type { LocalClickHouse } from "../services/store/localServer.js";
import { ensureDatabase, migrate } from "../services/store/migrations.js";
import { BENCH_AUTH, BENCH_KEY, clickhouseClient, inProcessServiceLog, printTable, startBenchClickHouse, stats, timeIt } from "./support.js";
import { MIGRATIONS } from "../services/resources.js";
import { quoteString } from "../services/store/sql.js";

const BACKGROUND = Number(process.env.BENCH_BACKGROUND_CALLS ?? 100_000);
const TRACE_CALLS = 1000;
const RUNS = 20;
const GOAL_MS = 100;
const PROJECT = "bench/usage";
const DATABASE = "bench_usage";
const BASE = Date.UTC(2026, 9, 1) * 1000; // µs
const MODELS = ["gpt-4o-mini", "claude-3-5-haiku-20241022", "gemini-2.0-flash"];

function clickhouse(ch: LocalClickHouse, sql: string): void {
  clickhouseClient(ch, sql, { database: DATABASE });
}

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("usage");
  const { ch, dir } = bench;
  console.log(`ClickHouse data on: ${bench.filesystem}`);
  let service: RunningService | null = null;
  try {
    await ensureDatabase(ch.url, DATABASE);
    const store = new ClickHouseStore(ch.url, DATABASE);
    await migrate(store, MIGRATIONS);
    await store.close();

    const model = (n: string) => `arrayElement([${MODELS.map(quoteString).join(", ")}], ${n} % ${MODELS.length} + 1)`;
    const paths = (m: string) => `[concat('summary.usage.', ${m}, '.prompt_tokens'), concat('summary.usage.', ${m}, '.completion_tokens'), concat('summary.usage.', ${m}, '.requests'), 'inputs.n']`;
    const values = "[toString(number % 100 + 1), toString(number % 10), '1', toString(number)]";
    const insert = (count: number, id: string, trace: string, parent: string, startedAt: string) => {
      const m = model("number");
      clickhouse(ch, `INSERT INTO calls (project_id, id, trace_id, parent_id, op_name, started_at, ended_at, attributes, inputs, output, summary, wb_user_id, json_paths, json_values, storage_size_bytes, version)
        SELECT ${quoteString(PROJECT)}, ${id}, ${trace}, ${parent}, 'weave:///bench/usage/op/step:v1', ${startedAt}, ${startedAt} + 250000,
          '{}', concat('{"n":', toString(number), '}'), '{"ok":true}',
          concat('{"usage":{"', ${m}, '":{"prompt_tokens":', toString(number % 100 + 1), ',"completion_tokens":', toString(number % 10), ',"requests":1}}}'),
          'bench', ${paths(m)}, ${values}, 200, 1
        FROM numbers(${count})`);
      clickhouse(ch, `INSERT INTO call_index (project_id, id, started_at, trace_id, parent_id)
        SELECT ${quoteString(PROJECT)}, ${id}, ${startedAt}, ${trace}, ${parent} FROM numbers(${count})`);
    };
    const t0 = performance.now();
    // Background: traces of 10 calls, one call a second.
    insert(BACKGROUND, "concat('b', toString(number))", "concat('bt', toString(intDiv(number, 10)))",
      "if(number % 10 = 0, NULL, concat('b', toString(number - number % 10)))", `${BASE} + number * 1000000`);
    // The trace: a 10-ary tree of 1,000 calls within one second, in the middle of the background.
    const middle = BASE + Math.floor(BACKGROUND / 2) * 1_000_000;
    insert(TRACE_CALLS, "concat('u', toString(number))", "'big-trace'", "if(number = 0, NULL, concat('u', toString(intDiv(number - 1, 10))))", `${middle} + number * 1000`);
    clickhouse(ch, "OPTIMIZE TABLE calls FINAL");
    clickhouse(ch, "OPTIMIZE TABLE call_index FINAL");
    const seedSeconds = (performance.now() - t0) / 1000;

    service = await startService(
      loadConfig({
        PORT: "0",
        HOST: "127.0.0.1",
        CLICKHOUSE_URL: ch.url,
        CLICKHOUSE_DATABASE: DATABASE,
        DATA_DIR: dir,
        AUTH_KEYS: JSON.stringify([{ key: BENCH_KEY, username: "bench", entities: ["*"] }]),
      }),
      inProcessServiceLog(),
    );
    const url = service.url!;
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: BENCH_AUTH }, body: JSON.stringify(body) });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text}`);
      return JSON.parse(text) as { call_usage: Record<string, Record<string, { prompt_tokens: number; requests: number }>>; count?: number };
    };
    await post("/cost/create", { project_id: PROJECT, costs: { "gpt-4o-mini": { prompt_token_cost: 1e-7, completion_token_cost: 5e-7, effective_date: "2026-01-01T00:00:00Z" } } });

    // The answer must be the whole tree: 1,000 requests, Σ (n % 100 + 1) prompt tokens.
    const check = await post("/calls/usage", { project_id: PROJECT, call_ids: ["u0"] });
    const models = Object.values(check.call_usage.u0 ?? {});
    const requests = models.reduce((s, m) => s + m.requests, 0);
    const prompt = models.reduce((s, m) => s + m.prompt_tokens, 0);
    let wantPrompt = 0;
    for (let n = 0; n < TRACE_CALLS; n++) wantPrompt += (n % 100) + 1;
    if (requests !== TRACE_CALLS || prompt !== wantPrompt) throw new Error(`wrong answer: ${requests} requests, ${prompt} prompt tokens`);

    const cases: { name: string; path: string; body: object }[] = [
      { name: "/calls/usage root", path: "/calls/usage", body: { project_id: PROJECT, call_ids: ["u0"] } },
      { name: "/calls/usage root, include_costs", path: "/calls/usage", body: { project_id: PROJECT, call_ids: ["u0"], include_costs: true } },
      { name: "/calls/usage 10 inner calls", path: "/calls/usage", body: { project_id: PROJECT, call_ids: Array.from({ length: 10 }, (_, i) => `u${i + 1}`) } },
      { name: "/trace/usage trace_ids filter", path: "/trace/usage", body: { project_id: PROJECT, filter: { trace_ids: ["big-trace"] } } },
    ];
    // Not part of the goal: the computed cost field over the whole project.
    const scans: { name: string; path: string; body: object }[] = [
      {
        name: `/calls/query_stats, summary.weave.costs_total > 0 (${(BACKGROUND + TRACE_CALLS).toLocaleString("en")} calls)`,
        path: "/calls/query_stats",
        body: { project_id: PROJECT, query: { $expr: { $gt: [{ $getField: "summary.weave.costs_total" }, { $literal: 0 }] } } },
      },
    ];
    const rows = [];
    for (const c of cases) {
      const s = stats(await timeIt(RUNS, () => post(c.path, c.body)));
      rows.push({ request: c.name, "p50 ms": s.p50, "p99 ms": s.p99, "mean ms": s.mean, [`p50 ≤ ${GOAL_MS} ms`]: s.p50 <= GOAL_MS ? "yes" : "NO" });
    }
    for (const c of scans) {
      const s = stats(await timeIt(5, () => post(c.path, c.body)));
      rows.push({ request: c.name, "p50 ms": s.p50, "p99 ms": s.p99, "mean ms": s.mean, [`p50 ≤ ${GOAL_MS} ms`]: "(no goal)" });
    }
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const perOperation = new Map<string, { sum: number; count: number }>();
    for (const m of metrics.matchAll(/^clickhouse_query_seconds_(sum|count)\{operation="([^"]+)"\} (\S+)$/gm)) {
      const entry = perOperation.get(m[2]!) ?? { sum: 0, count: 0 };
      entry[m[1] as "sum" | "count"] = Number(m[3]);
      perOperation.set(m[2]!, entry);
    }
    printTable(`Usage of a ${TRACE_CALLS.toLocaleString("en")}-call trace among ${BACKGROUND.toLocaleString("en")} other calls (${RUNS} runs, HTTP end to end; seeded in ${seedSeconds.toFixed(1)} s)`, rows);
    printTable("ClickHouse time per query of the runs above (the service's clickhouse_query_seconds)", [...perOperation]
      .filter(([op]) => op.startsWith("usage_") || op.startsWith("costs_"))
      .map(([op, m]) => ({ operation: op, queries: m.count, "mean ms": (m.sum / m.count) * 1000 })));
  } finally {
    if (service) await service.stop();
    await bench.stop();
  }
}

await main();
