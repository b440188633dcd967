/**
 * Bytes stored per call and per OTLP span (issue 12, "a leaner row"). Writes CALLS typical
 * SDK calls (the calls bench's shape, with output and usage) and SPANS OTLP spans (the OTLP
 * bench's agent traces) through the worker's own merge and row writer into a fresh local
 * ClickHouse, the calls in January 2026 and the spans in March 2026 so that each is its own
 * partition; after OPTIMIZE ... FINAL (one version per call), prints from
 * system.parts_columns the compressed and uncompressed bytes per row of every column of
 * `calls`, for each. Then what storing each kind costs ClickHouse, and which columns make that
 * cost: its server's CPU per row to insert the rows again into a copy of `calls` (an
 * `INSERT ... SELECT`, less the same `SELECT` alone), as they are and with one heavy column
 * emptied at a time; the median of BENCH_ROW_INSERT_RUNS runs. Then what the order of the
 * rows in an insert costs it: the rows sent by `clickhouse-client` in the table's sort key
 * order, as the worker sends them, and shuffled. Last, the span rows sent so in lighter
 * layouts made from them in SQL (LAYOUTS: what issue 43's "lighter stored span" could still
 * take out), with `clickhouse-client`'s rows per second. `npx tsx bench/run.ts rowBytes`.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeProtobufRequest } from "../services/otlp/decode.js";
import { mapSpans } from "../services/otlp/mapSpan.js";
import type { CallPartEvent } from "../services/queue/events.js";
import { MIGRATIONS } from "../services/resources.js";
import { ClickHouseStore } from "../services/store/clickhouse.js";
import { CallsWriteRepository } from "../services/store/calls/callsWrite.js";
import type { LocalClickHouse } from "../services/store/localServer.js";
import { ensureDatabase, migrate } from "../services/store/migrations.js";
import { mergeCallParts } from "../services/worker/callMerge.js";
import { protobufRequest, requestSpans } from "./otlpSpans.js";
import { childPids, clickhouseClient, cpuSeconds, printTable, startBenchClickHouse, type ClientRun } from "./support.js";
import { quoteString } from "../services/store/sql.js";

const CALLS = Number(process.env.BENCH_ROW_CALLS ?? 20_480);
const SPAN_REQUESTS = Number(process.env.BENCH_ROW_SPAN_REQUESTS ?? 40);
const DATABASE = "rowbytes";
const CALLS_T0 = Date.UTC(2026, 0, 5) * 1000;
const SPANS_T0_NS = BigInt(Date.UTC(2026, 2, 5)) * 1_000_000n;
const INSERT_RUNS = Number(process.env.BENCH_ROW_INSERT_RUNS ?? 3);
const CALLS_PROJECT = "bench/rows";
const SPANS_PROJECT = "bench/spans";

/** The heavy columns emptied, one variant each (the column's SQL replaced by an empty value of its type). */
const INSERT_VARIANTS: Record<string, Record<string, string>> = {
  "as stored": {},
  "json_paths empty": { json_paths: "emptyArrayString()" },
  "json_values empty": { json_values: "emptyArrayString()" },
  "json_paths and json_values empty": { json_paths: "emptyArrayString()", json_values: "emptyArrayString()" },
  "attributes empty": { attributes: "'{}'" },
};

/** One SDK call as the calls bench sends it, ended with an output and a usage summary. */
function sdkCall(i: number): CallPartEvent[] {
  const request = Math.floor(i / 10);
  const at = CALLS_T0 + i * 1000;
  const id = `r${request}-${i % 10}`;
  return [
    {
      kind: "call_complete", project_id: CALLS_PROJECT, id, trace_id: `t${request}`, parent_id: i % 10 === 0 ? null : `r${request}-0`,
      thread_id: null, turn_id: null, op_name: `weave:///bench/ingest/op/step${i % 20}:v1`, display_name: null, started_at: at,
      attributes: { env: "bench" }, inputs: { question: `what is ${i % 10} plus ${request}?`, n: i % 10 }, otel_dump: null,
      wb_user_id: "bench-user", wb_run_id: null, wb_run_step: null,
      ended_at: at + 900, exception: null, output: { answer: `${(i % 10) + request}` },
      summary: { usage: { "gpt-4o-mini": { requests: 1, prompt_tokens: 20 + (i % 7), completion_tokens: 5 } } }, wb_run_step_end: null,
    },
  ];
}

function spanParts(): CallPartEvent[][] {
  const byCall = new Map<string, CallPartEvent[]>();
  for (let r = 0; r < SPAN_REQUESTS; r++) {
    const batch = decodeProtobufRequest(protobufRequest(requestSpans(r, SPANS_T0_NS)));
    const { events } = mapSpans(batch, { project_id: SPANS_PROJECT, wb_user_id: "bench-user", maxSpanBytes: 1 << 20 });
    for (const e of events) byCall.set(e.id + r, [...(byCall.get(e.id + r) ?? []), e]);
  }
  return [...byCall.values()];
}

async function write(store: ClickHouseStore, calls: CallPartEvent[][]): Promise<void> {
  const repo = new CallsWriteRepository(store);
  const snapshots = calls.flatMap((parts) => {
    const { snapshot } = mergeCallParts(null, parts);
    return snapshot ? [{ snapshot, version: 1 }] : [];
  });
  for (let i = 0; i < snapshots.length; i += 1024) await repo.insertSnapshots(snapshots.slice(i, i + 1024));
}

interface ColumnBytes {
  partition: string;
  column: string;
  compressed: number;
  uncompressed: number;
}

async function columnBytes(store: ClickHouseStore): Promise<{ columns: ColumnBytes[]; rows: Map<string, number> }> {
  const columns = await store.rows<ColumnBytes>("rowbytes_columns", {
    sql: `SELECT partition, column, sum(column_data_compressed_bytes) AS compressed, sum(column_data_uncompressed_bytes) AS uncompressed
          FROM system.parts_columns WHERE database = currentDatabase() AND table = 'calls' AND active
          GROUP BY partition, column ORDER BY partition, column`,
    params: {},
  });
  const parts = await store.rows<{ partition: string; rows: number }>("rowbytes_rows", {
    sql: "SELECT partition, sum(rows) AS rows FROM system.parts WHERE database = currentDatabase() AND table = 'calls' AND active GROUP BY partition",
    params: {},
  });
  return { columns, rows: new Map(parts.map((p) => [p.partition, Number(p.rows)])) };
}

/** What `span_resources` holds for the spans (store/calls/spanResources.ts): its rows, and its bytes shared out per span. */
async function sharedBytes(store: ClickHouseStore, spans: number): Promise<Record<string, string | number>[]> {
  const [stored] = await store.rows<{ rows: string; compressed: string; uncompressed: string }>("rowbytes_span_resources", {
    sql: `SELECT (SELECT count() FROM span_resources) AS rows, sum(column_data_compressed_bytes) AS compressed, sum(column_data_uncompressed_bytes) AS uncompressed
          FROM system.parts_columns WHERE database = currentDatabase() AND table = 'span_resources' AND active`,
    params: {},
  });
  const perSpan = (n: string | undefined) => (Number(n ?? 0) / spans).toFixed(2);
  return [{ rows: Number(stored?.rows ?? 0), "compressed B per span": perSpan(stored?.compressed), "uncompressed B per span": perSpan(stored?.uncompressed) }];
}

function report(title: string, columns: ColumnBytes[], rows: number): void {
  const perRow = (n: number) => (Number(n) / rows).toFixed(1);
  const table = columns
    .filter((c) => Number(c.uncompressed) > 0)
    .sort((a, b) => Number(b.compressed) - Number(a.compressed))
    .map((c) => ({ column: c.column, "compressed B/row": perRow(c.compressed), "uncompressed B/row": perRow(c.uncompressed) }));
  const sum = (key: "compressed" | "uncompressed") => columns.reduce((s, c) => s + Number(c[key]), 0);
  table.push({ column: "TOTAL", "compressed B/row": perRow(sum("compressed")), "uncompressed B/row": perRow(sum("uncompressed")) });
  printTable(`${title} (${rows} rows)`, table);
}

/**
 * ClickHouse's CPU per row to insert the project's rows of `calls` again into a copy of it,
 * as stored and with heavy columns emptied (INSERT_VARIANTS): each run times the `SELECT`
 * alone, then the `INSERT ... SELECT`, and counts the difference; merges are stopped so that
 * none runs meanwhile. The server's whole CPU is read (/proc), so the machine should be quiet.
 */
async function insertCosts(store: ClickHouseStore, serverPid: number, project: string): Promise<Record<string, string | number>[]> {
  const columns = (await store.rows<{ name: string }>("rowbytes_columns_of_calls", { sql: "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'calls'", params: {} })).map((c) => c.name);
  const [{ rows }] = (await store.rows<{ rows: string }>("rowbytes_count", { sql: `SELECT count() AS rows FROM calls WHERE project_id = ${quoteString(project)}`, params: {} })) as [{ rows: string }];
  const timed = async (sql: string): Promise<number> => {
    const before = cpuSeconds(serverPid);
    await store.command("rowbytes_insert_cost", { sql, params: {} });
    return cpuSeconds(serverPid) - before;
  };
  await store.command("rowbytes_stop_merges", { sql: "SYSTEM STOP MERGES", params: {} });
  const out: Record<string, string | number>[] = [];
  for (const [variant, replaced] of Object.entries(INSERT_VARIANTS)) {
    const select = `SELECT ${columns.map((c) => (replaced[c] ? `${replaced[c]} AS ${c}` : c)).join(", ")} FROM calls WHERE project_id = ${quoteString(project)}`;
    const copy = `calls_copy_${project.replace(/\W/g, "_")}_${out.length}`;
    await store.command("rowbytes_copy", { sql: `CREATE TABLE ${copy} AS calls`, params: {} });
    const perRow: number[] = [];
    for (let run = 0; run < INSERT_RUNS; run++) {
      const selectAlone = await timed(`SELECT count() FROM (${select})`);
      perRow.push(((await timed(`INSERT INTO ${copy} ${select}`)) - selectAlone) * 1e6 / Number(rows));
    }
    out.push({ variant, "ClickHouse CPU µs per row inserted (median)": median(perRow).toFixed(1) });
  }
  await store.command("rowbytes_start_merges", { sql: "SYSTEM START MERGES", params: {} });
  return out;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The two orders the rows are inserted in: the table's sort key (as the worker sends them: store/calls/callsWrite.ts), and shuffled. */
const ORDERS = { "sort key order (as the worker sends them)": "project_id, started_at, id", shuffled: "cityHash64(id)" };

/**
 * A row of `calls` as it could be stored (issue 43, "a lighter stored span"), made in SQL from
 * the stored span rows (their resource and scope already stored once: store/calls/spanResources.ts):
 * each column's SQL where it differs from the stored column, and columns it adds; the SQL
 * reads the stored texts and leaves as `stored_<column>` (STORED_COLUMNS). Each layout keeps
 * what the one before it keeps, less one copy.
 */
interface Layout {
  readonly replaced: Record<string, string>;
  readonly added: Record<string, { type: string; sql: string }>;
}

const MESSAGE_LEAF = "p IN ('attributes.otel.attributes.gen_ai.input.messages', 'attributes.otel.attributes.gen_ai.output.messages')";
/**
 * The leaves of the messages the mapping moved to the inputs and output left out too (their
 * text is stored once already: store/calls/ioCopies.ts).
 */
const MESSAGES_OUT: Layout = {
  replaced: {
    json_paths: `arrayFilter(p -> NOT ${MESSAGE_LEAF}, stored_paths)`,
    json_values: `arrayFilter((v, p) -> NOT ${MESSAGE_LEAF}, stored_values, stored_paths)`,
  },
  added: {},
};
/** The JSON texts made from the leaves when read: stored empty, a type letter per leaf in. */
const TEXTS_OUT: Layout = {
  replaced: { ...MESSAGES_OUT.replaced, attributes: "''", inputs: "''", output: "if(isNull(stored_output), NULL, '')" },
  added: { json_types: { type: "String", sql: `arrayStringConcat(arrayMap(p -> 's', ${MESSAGES_OUT.replaced["json_paths"]}))` } },
};
const STORED_COLUMNS = "output AS stored_output, json_paths AS stored_paths, json_values AS stored_values";
const LAYOUTS: Record<string, Layout> = {
  "as stored": { replaced: {}, added: {} },
  "+ the moved messages' leaves not kept": MESSAGES_OUT,
  "+ the JSON texts made from the leaves": TEXTS_OUT,
};

/** `clickhouse-client` on the bench's database: its output. */
type Client = (sql: string, run?: ClientRun) => string;

/** Rows of the project as RowBinary in a file, and the table they go into: `columns`, the insert's column list. */
interface InsertFile {
  readonly label: Record<string, string>;
  readonly file: string;
  readonly create: readonly string[];
  readonly columns: string;
  perRow: number[];
  wallPerRow: number[];
  sorted: number;
}

/**
 * ClickHouse's CPU per row to insert each file's rows, sent by `clickhouse-client` as one
 * RowBinary block into a fresh table (the median of INSERT_RUNS runs, alternated), its wall
 * time per row, and how many of its blocks ClickHouse found already sorted (it then writes the
 * part without sorting every column first).
 */
function clientInsertCosts(client: Client, serverPid: number, rows: number, files: InsertFile[]): Record<string, string | number>[] {
  const sortedBlocks = () => Number(client("SELECT sum(value) FROM system.events WHERE event = 'MergeTreeDataWriterBlocksAlreadySorted'").trim());
  for (let run = 0; run < INSERT_RUNS; run++) {
    for (const f of files) {
      client("DROP TABLE IF EXISTS calls_insert_copy");
      for (const statement of f.create) client(statement);
      const [cpu, sorted, wall] = [cpuSeconds(serverPid), sortedBlocks(), performance.now()];
      client(`INSERT INTO calls_insert_copy (${f.columns}) FORMAT RowBinary`, { inputFile: f.file });
      f.wallPerRow.push((performance.now() - wall) / 1000 / rows);
      f.perRow.push((cpuSeconds(serverPid) - cpu) * 1e6 / rows);
      f.sorted += sortedBlocks() - sorted;
    }
  }
  client("DROP TABLE calls_insert_copy");
  return files.map((f) => ({
    ...f.label,
    "bytes per row sent": Math.round(statSync(f.file).size / rows),
    "ClickHouse CPU µs per row inserted (median)": median(f.perRow).toFixed(1),
    "clickhouse-client rows/s (median)": Math.round(1 / median(f.wallPerRow)),
    "inserts ClickHouse found already sorted": `${f.sorted} of ${INSERT_RUNS}`,
  }));
}

/** The project's rows sent by `clickhouse-client`: in each of ORDERS as stored, and (`layouts`) in the sort key's order in each of LAYOUTS. */
function clientInserts(ch: LocalClickHouse, serverPid: number, project: string, layouts: boolean): Record<string, string | number>[] {
  const client: Client = (sql, run = {}) => clickhouseClient(ch, sql, { database: DATABASE, ...run }).stdout;
  const dir = mkdtempSync(join(tmpdir(), "bench-row-inserts-"));
  const ofProject = `FROM calls WHERE project_id = ${quoteString(project)}`;
  const stored = `FROM (SELECT *, ${STORED_COLUMNS} ${ofProject})`;
  const columns = client(`SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'calls' FORMAT TSV`).trim().split("\n");
  let made = 0;
  const fileOf = (label: Record<string, string>, layout: Layout, order: string): InsertFile => {
    const file = join(dir, `rows-${made++}.bin`);
    const added = Object.entries(layout.added);
    const select = [...columns.map((c) => (layout.replaced[c] ? `${layout.replaced[c]} AS ${c}` : c)), ...added.map(([c, { sql }]) => `${sql} AS ${c}`)];
    client(`SELECT ${select.join(", ")} ${stored} ORDER BY ${order} FORMAT RowBinary`, { outputFile: file });
    const create = ["CREATE TABLE calls_insert_copy AS calls", ...added.map(([c, { type }]) => `ALTER TABLE calls_insert_copy ADD COLUMN ${c} ${type}`)];
    return { label, file, create, columns: [...columns, ...added.map(([c]) => c)].join(", "), perRow: [], wallPerRow: [], sorted: 0 };
  };
  try {
    const rows = Number(client(`SELECT count() ${ofProject}`).trim());
    const files = layouts
      ? Object.entries(LAYOUTS).map(([layout, spec]) => fileOf({ layout }, spec, ORDERS["sort key order (as the worker sends them)"]))
      : Object.entries(ORDERS).map(([order, key]) => fileOf({ "rows sent in": order }, LAYOUTS["as stored"]!, key));
    return clientInsertCosts(client, serverPid, rows, files);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("rowbytes");
  try {
    await ensureDatabase(bench.ch.url, DATABASE);
    const store = new ClickHouseStore(bench.ch.url, DATABASE);
    await migrate(store, MIGRATIONS);
    await write(store, Array.from({ length: CALLS }, (_, i) => sdkCall(i)));
    await write(store, spanParts());
    await store.command("rowbytes_optimize", { sql: "OPTIMIZE TABLE calls FINAL", params: {} });
    const { columns, rows } = await columnBytes(store);
    report("bytes per SDK call", columns.filter((c) => c.partition === "202601"), rows.get("202601") ?? 1);
    report("bytes per OTLP span", columns.filter((c) => c.partition === "202603"), rows.get("202603") ?? 1);
    printTable("the spans' resources and scopes, stored once (span_resources)", await sharedBytes(store, rows.get("202603") ?? 1));
    const [serverPid] = childPids("clickhouse");
    if (serverPid !== undefined) {
      printTable(`inserting an SDK call's row (${rows.get("202601")} rows, ${INSERT_RUNS} runs)`, await insertCosts(store, serverPid, CALLS_PROJECT));
      printTable(`inserting an OTLP span's row (${rows.get("202603")} rows, ${INSERT_RUNS} runs)`, await insertCosts(store, serverPid, SPANS_PROJECT));
      printTable(`inserting the SDK calls' rows in one block, by the order they are sent in (${INSERT_RUNS} runs)`, clientInserts(bench.ch, serverPid, CALLS_PROJECT, false));
      printTable(`inserting the OTLP spans' rows in one block, by the order they are sent in (${INSERT_RUNS} runs)`, clientInserts(bench.ch, serverPid, SPANS_PROJECT, false));
      printTable(`inserting the OTLP spans' rows in one block, stored lighter (issue 43; ${INSERT_RUNS} runs)`, clientInserts(bench.ch, serverPid, SPANS_PROJECT, true));
    }
    await store.close();
  } finally {
    await bench.stop();
  }
}

await main();
