/**
 * Web UI benchmark (issue: web UI, Speed), in headless chromium against the service:
 * - time until the traces table shows its first page, on a project of 1,000,000 calls
 *   (100,000 traces of 10 calls; goal ≤ 1 s);
 * - time until a trace of 10,000 calls is shown and interactive (its tree drawn and a click
 *   on a call showing that call's detail; goal ≤ 1 s), and the frame time while scrolling it;
 * - the size of the built JS, gzip.
 *
 *   npx tsx bench/ui.bench.ts        (BENCH_UI_CALLS to change the 1,000,000)
 *
 * Starts its own ClickHouse in a temporary directory and the service in this process; the
 * calls are inserted straight into ClickHouse (INSERT ... SELECT FROM numbers()) in the calls
 * table's shape. Stops both and removes the directory at the end.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { Page } from "playwright-core";
import { loadConfig } from "../services/config.js";
import { UI_BUILD_DIR } from "../services/query/uiRoutes.js";
import { MIGRATIONS } from "../services/resources.js";
import { startService, type RunningService } from "../services/service.js";
import { ClickHouseStore } from "../services/store/clickhouse.js";
import type { LocalClickHouse } from "../services/store/localServer.js";
import { ensureDatabase, migrate } from "../services/store/migrations.js";
import { buildUi, launchChromium } from "../test/ui/browser.js";
import { BENCH_KEY, clickhouseClient, inProcessServiceLog, printTable, startBenchClickHouse, stats } from "./support.js";
import { quoteString } from "../services/store/sql.js";

const CALLS = Number(process.env.BENCH_UI_CALLS ?? 1_000_000);
const TRACE_CALLS = 10_000;
const RUNS = 5;
const GOAL_MS = 1000;
const PROJECT = "bench/ui";
const DATABASE = "bench_ui";
const BASE = Date.UTC(2026, 9, 1) * 1000; // µs

function clickhouse(ch: LocalClickHouse, sql: string): void {
  clickhouseClient(ch, sql, { database: DATABASE });
}

function insertCalls(ch: LocalClickHouse, count: number, id: string, trace: string, parent: string, startedAt: string, op: string): void {
  clickhouse(ch, `INSERT INTO calls (project_id, id, trace_id, parent_id, op_name, started_at, ended_at, exception, attributes, inputs, output, summary, wb_user_id, json_paths, json_values, storage_size_bytes, version)
    SELECT ${quoteString(PROJECT)}, ${id}, ${trace}, ${parent}, ${op}, ${startedAt}, ${startedAt} + 250000 + (number % 1000) * 1000,
      if(number % 97 = 0, 'ValueError: failed', NULL), '{}', concat('{"n":', toString(number), '}'), '{"ok":true}',
      '{"usage":{"gpt-4o-mini":{"prompt_tokens":10,"completion_tokens":5,"requests":1}}}', 'bench',
      ['inputs.n', 'summary.usage.gpt-4o-mini.prompt_tokens', 'summary.usage.gpt-4o-mini.completion_tokens', 'summary.usage.gpt-4o-mini.requests'],
      [toString(number), '10', '5', '1'], 200, 1
    FROM numbers(${count})`);
  clickhouse(ch, `INSERT INTO call_index (project_id, id, started_at, trace_id, parent_id) SELECT ${quoteString(PROJECT)}, ${id}, ${startedAt}, ${trace}, ${parent} FROM numbers(${count})`);
}

async function logIn(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/ui/login`);
  await page.getByLabel("API key").fill(BENCH_KEY);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Projects" }).waitFor();
}

async function timeTo(page: Page, url: string, ready: () => Promise<unknown>): Promise<number> {
  await page.goto("about:blank");
  const t0 = performance.now();
  await page.goto(url);
  await ready();
  return performance.now() - t0;
}

/**
 * Frame times (ms) while the trace scrolls by 60 px per animation frame for `frames` frames.
 * Passed as text: tsx would wrap a named function in a helper the page does not have.
 */
function scrollFrames(page: Page, frames: number): Promise<number[]> {
  return page.evaluate(`new Promise((done) => {
    const el = document.querySelector("[data-testid=trace-scroller]");
    const times = [];
    let last = performance.now();
    const step = () => {
      const now = performance.now();
      times.push(now - last);
      last = now;
      el.scrollTop += 60;
      if (times.length > ${frames}) done(times.slice(1));
      else requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  })`) as Promise<number[]>;
}

function jsGzipBytes(): { raw: number; gzip: number } {
  const dir = join(UI_BUILD_DIR, "assets");
  let raw = 0;
  let gzip = 0;
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".js"))) {
    const bytes = readFileSync(join(dir, f));
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
  }
  return { raw, gzip };
}

async function main(): Promise<void> {
  buildUi();
  const bench = await startBenchClickHouse("ui");
  const { ch, dir } = bench;
  console.log(`ClickHouse data on: ${bench.filesystem}; the machine is shared, figures are upper bounds`);
  let service: RunningService | null = null;
  const browser = await launchChromium();
  try {
    await ensureDatabase(ch.url, DATABASE);
    const store = new ClickHouseStore(ch.url, DATABASE);
    await migrate(store, MIGRATIONS);
    await store.close();
    const t0 = performance.now();
    // Traces of 10 calls, a call every 10 ms: roots are calls whose number is a multiple of 10.
    insertCalls(ch, CALLS, "concat('c', toString(number))", "concat('t', toString(intDiv(number, 10)))", "if(number % 10 = 0, NULL, concat('c', toString(number - number % 10)))", `${BASE} + number * 10000`,
      "arrayElement(['agent', 'llm', 'tool', 'retriever'], number % 4 + 1)");
    // The big trace: a 10-ary tree of 10,000 calls, in the middle of the range.
    const middle = BASE + Math.floor(CALLS / 2) * 10_000;
    insertCalls(ch, TRACE_CALLS, "concat('big', toString(number))", "'big-trace'", "if(number = 0, NULL, concat('big', toString(intDiv(number - 1, 10))))", `${middle} + number * 100`, "'step'");
    clickhouse(ch, "OPTIMIZE TABLE calls FINAL");
    const seedSeconds = (performance.now() - t0) / 1000;

    service = await startService(
      loadConfig({ PORT: "0", HOST: "127.0.0.1", CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: DATABASE, DATA_DIR: dir, AUTH_KEYS: JSON.stringify([{ key: BENCH_KEY, username: "bench", entities: ["*"] }]) }),
      inProcessServiceLog(),
    );
    const url = service.url!;
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(60_000);
    await logIn(page, url);

    const tracesUrl = `${url}/ui/${PROJECT}/traces`;
    const firstPage = await timeRuns(() => timeTo(page, tracesUrl, () => page.locator(".grid-row").first().waitFor()));
    const traceUrl = `${url}/ui/${PROJECT}/calls/big0`;
    const shown = await timeRuns(async () => {
      const ms = await timeTo(page, traceUrl, async () => {
        await page.locator(".tree-head", { hasText: `${TRACE_CALLS.toLocaleString("en-US")} calls` }).waitFor();
        await page.locator(".tree-row.selected").waitFor();
      });
      return ms;
    });
    const clickToDetail = await timeRuns(async () => {
      const row = page.locator(".tree-row").nth(3 + Math.floor(Math.random() * 10));
      const id = await row.getAttribute("data-call-id");
      const t = performance.now();
      await row.click();
      await page.locator(".call-detail .facts", { hasText: `id ${id}` }).waitFor();
      return performance.now() - t;
    });
    // The API's share: the same requests the pages make, from Node, answers read whole.
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`api:${BENCH_KEY}`).toString("base64")}` }, body: JSON.stringify(body) });
      await res.text();
    };
    const traceColumns = ["id", "parent_id", "op_name", "display_name", "started_at", "ended_at", "exception"];
    const apiFirstPage = await timeRuns(async () => {
      const t = performance.now();
      await api("/calls/stream_query", { project_id: PROJECT, filter: { trace_roots_only: true }, sort_by: [{ field: "started_at", direction: "desc" }], limit: 100, offset: 0, columns: ["id", "op_name", "display_name", "trace_id", "parent_id", "started_at", "ended_at", "exception", "summary", "wb_user_id"], include_costs: true });
      return performance.now() - t;
    });
    const apiTrace = await timeRuns(async () => {
      const t = performance.now();
      await api("/call/read", { project_id: PROJECT, id: "big0", include_costs: true });
      await api("/calls/stream_query", { project_id: PROJECT, filter: { trace_ids: ["big-trace"] }, sort_by: [{ field: "started_at", direction: "asc" }], columns: traceColumns, limit: 100_000 });
      return performance.now() - t;
    });
    const frames = await scrollFrames(page, 240);
    const rendered = await page.locator(".tree-row").count();
    const js = jsGzipBytes();

    const goal = (ms: number) => (ms <= GOAL_MS ? "yes" : "NO");
    printTable(`Web UI in headless chromium (${RUNS} runs each; ${CALLS.toLocaleString("en")} calls seeded in ${seedSeconds.toFixed(1)} s)`, [
      { measure: `traces table, first page (${CALLS.toLocaleString("en")} calls)`, "p50 ms": firstPage.p50, "max ms": firstPage.max, [`p50 ≤ ${GOAL_MS} ms`]: goal(firstPage.p50) },
      { measure: "  of which the API: /calls/stream_query, first page (from Node, alone)", "p50 ms": apiFirstPage.p50, "max ms": apiFirstPage.max, [`p50 ≤ ${GOAL_MS} ms`]: "" },
      { measure: `trace of ${TRACE_CALLS.toLocaleString("en")} calls shown (navigation → tree drawn)`, "p50 ms": shown.p50, "max ms": shown.max, [`p50 ≤ ${GOAL_MS} ms`]: goal(shown.p50) },
      { measure: "  of which the API: /call/read then the trace's calls (from Node)", "p50 ms": apiTrace.p50, "max ms": apiTrace.max, [`p50 ≤ ${GOAL_MS} ms`]: "" },
      { measure: "then a click on a call → its detail shown", "p50 ms": clickToDetail.p50, "max ms": clickToDetail.max, [`p50 ≤ ${GOAL_MS} ms`]: "(part of interactive)" },
    ]);
    const frameStats = stats(frames);
    printTable("Scrolling the 10,000-call trace (240 animation frames, 60 px each)", [
      { "frame p50 ms": frameStats.p50, "frame p99 ms": frameStats.p99, "frame max ms": Math.max(...frames), "rows in the DOM": rendered },
    ]);
    printTable("Built JS", [{ "raw KiB": js.raw / 1024, "gzip KiB": js.gzip / 1024 }]);
  } finally {
    await browser.close();
    if (service) await service.stop();
    await bench.stop();
  }
}

async function timeRuns(run: () => Promise<number>): Promise<{ p50: number; max: number }> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) samples.push(await run());
  const s = stats(samples);
  return { p50: s.p50, max: Math.max(...samples) };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
