import { ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseSettings } from "@clickhouse/client";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { Histogram } from "prom-client";
import { insertDuration, rowsWritten } from "../metrics.js";
import { ClientError, StoreQueryError, StoreUnavailableError, errorText } from "../errors.js";
import { uuid4 } from "../ids.js";
import { readStringColumn } from "./rowBinary.js";
import { quoteString, renderSql, SqlParamError, type BuiltQuery } from "./sql.js";

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const queryDuration = new Histogram({
  name: "clickhouse_query_seconds",
  help: "ClickHouse query time by operation",
  labelNames: ["operation"],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

/**
 * A ClickHouse reached through a client made elsewhere instead of the HTTP interface at a
 * URL (the test suite's second run uses an embedded engine so). Such a connection may not
 * do all the HTTP interface does; these say what it lacks, and the store works around it.
 */
export interface InjectedClickHouse {
  /** Stands where the URL would (logs, `RunningService.clickhouseUrl`). */
  readonly name: string;
  /** A client of its own for one store, which closes it. */
  client(): ClickHouseClient;
  /** The connection ignores the client's `database` option: every statement must select it. */
  readonly ignoresDatabaseOption: boolean;
  /**
   * Set when the connection reads request bodies as text (binary rows would arrive
   * mangled) but the engine can read files of this machine: RowBinary rows are written to
   * a file in this directory and inserted `FROM INFILE`.
   */
  readonly binaryRowsDir: string | null;
}

export interface StoreOptions {
  /** Tables are Distributed over local Replicated ones on this cluster (store/clusterSchema.ts). */
  readonly cluster?: string;
  /** The cluster with one replica of each shard that ALTERs of the local tables run on (CLICKHOUSE_ALTER_CLUSTER); `cluster` when absent. */
  readonly alterCluster?: string;
}

/**
 * On a cluster: an insert into a Distributed table is answered once the shards wrote it (not
 * once queued on the node that took it: our acknowledgements mean durable), and subqueries
 * and joins read the shard's local tables (a project's rows all live on one shard). Reads and
 * writes of every process, whichever node it talks to, go to the same replica of a shard
 * (the first that answers, in the cluster's order), so a read sees the writes before it
 * without waiting for replication; the other replica takes over when the first is down.
 * A read that cannot reach some shard fails (retryable: 503) instead of answering from the
 * others, which would be a partial answer (pinned: a server profile may skip such shards).
 * `prefer_localhost_replica` is on only where the node talked to is that first replica
 * (`localReplicaSettings`): its own shard is then read in-process, not through a connection
 * to itself, and the same replica answers.
 */
const NO_SETTINGS: Promise<ClickHouseSettings> = Promise.resolve({});
const FIRST_REPLICA_RETRY_MS = 30_000;

const CLUSTER_SETTINGS: ClickHouseSettings = {
  insert_distributed_sync: 1,
  distributed_product_mode: "local",
  load_balancing: "in_order",
  prefer_localhost_replica: 0,
  skip_unavailable_shards: 0,
};

/**
 * ClickHouse over HTTP (or an injected connection). Every call names its operation: it becomes
 * the query_id prefix (so system.query_log leads back to the code path) and the metric label.
 */
export class ClickHouseStore {
  readonly url: string;
  private readonly client: ClickHouseClient;
  private readonly injected: InjectedClickHouse | null;
  private writeSettingsOnce: Promise<ClickHouseSettings> | null = null;
  private readSettingsOnce: Promise<ClickHouseSettings> | null = null;
  private readSettingsRetryAt = 0;
  /** The ClickHouse cluster the schema is spread over (CLICKHOUSE_CLUSTER), null on a single node. */
  readonly cluster: string | null;
  /**
   * Where an ALTER of a Replicated local table runs `ON CLUSTER` (null on a single node): one
   * replica per shard, replication does the rest (18.16's DDL worker can end when both
   * replicas of a shard run one).
   */
  readonly alterCluster: string | null;
  private unavailableAt = 0;

  constructor(target: string | InjectedClickHouse, readonly database: string, options: StoreOptions = {}) {
    if (!IDENTIFIER.test(database)) throw new Error(`invalid database name: ${database}`);
    this.cluster = options.cluster ?? null;
    this.alterCluster = this.cluster === null ? null : (options.alterCluster ?? this.cluster);
    for (const name of [this.cluster, this.alterCluster]) if (name !== null && !IDENTIFIER.test(name)) throw new Error(`invalid cluster name: ${name}`);
    if (typeof target === "string") {
      this.url = target;
      this.injected = null;
      this.client = createClient({
        url: target,
        database,
        request_timeout: 60_000,
        max_open_connections: 32,
        clickhouse_settings: this.cluster === null ? {} : CLUSTER_SETTINGS,
        log: { level: ClickHouseLogLevel.OFF },
      });
    } else {
      this.url = target.name;
      this.injected = target;
      this.client = target.client();
    }
  }

  /** When a statement last failed because ClickHouse (or a shard or ZooKeeper behind it) was unavailable; 0: never. */
  get lastUnavailableAt(): number {
    return this.unavailableAt;
  }

  async ping(): Promise<boolean> {
    const result = await this.client.ping();
    return result.success;
  }

  async rows<T>(operation: string, query: BuiltQuery): Promise<T[]> {
    return this.timed(operation, async (query_id) => {
      const rs = await this.client.query({ query: this.statement(query), format: "JSONEachRow", query_id, clickhouse_settings: await this.readSettings() });
      return rs.json<T>();
    });
  }

  /** Streams rows as they arrive; the caller consumes them with `for await`. */
  async *stream<T>(operation: string, query: BuiltQuery): AsyncGenerator<T> {
    const end = queryDuration.startTimer({ operation });
    try {
      const rs = await this.client.query({
        query: this.statement(query),
        format: "JSONEachRow",
        query_id: `${operation}-${uuid4()}`,
        clickhouse_settings: await this.readSettings(),
      });
      for await (const batch of rs.stream<T>()) {
        for (const row of batch) yield row.json<T>();
      }
    } catch (err) {
      throw wrapError(err);
    } finally {
      end();
    }
  }

  /**
   * Each row's value of a query selecting one String column, as the exact bytes stored
   * (read in RowBinary, so binary content comes back unchanged), one at a time as they
   * arrive; no value may exceed `maxValueBytes`.
   */
  async *blobs(operation: string, query: BuiltQuery, maxValueBytes: number): AsyncGenerator<Buffer> {
    const end = queryDuration.startTimer({ operation });
    let stream: Readable | null = null;
    try {
      const result = await this.client.exec({ query: `${this.statement(query)} FORMAT RowBinary`, query_id: `${operation}-${uuid4()}`, clickhouse_settings: await this.readSettings() });
      stream = result.stream;
      yield* readStringColumn(stream, maxValueBytes);
    } catch (err) {
      throw wrapError(err);
    } finally {
      if (stream && !stream.readableEnded) stream.destroy();
      end();
    }
  }

  /** DDL and writes done inside ClickHouse (`INSERT ... SELECT`, `INSERT ... VALUES`). */
  async command(operation: string, query: BuiltQuery): Promise<void> {
    await this.timed(operation, async (query_id) =>
      this.client.command({ query: this.statement(query), query_id, clickhouse_settings: await this.writingSettings() }),
    );
  }

  async insert<T extends object>(operation: string, table: string, rows: readonly T[]): Promise<void> {
    if (rows.length === 0) return;
    if (!IDENTIFIER.test(table)) throw new Error(`invalid identifier ${table}`);
    // An insert names a table, not a statement: qualified where the connection ignores the database option.
    const target = this.injected?.ignoresDatabaseOption ? `${this.database}.${table}` : table;
    await this.timedInsert(table, rows.length, () =>
      this.timed(operation, async (query_id) =>
        this.client.insert({ table: target, values: rows as T[], format: "JSONEachRow", query_id, clickhouse_settings: await this.writingSettings() }),
      ),
    );
  }

  /**
   * Inserts rows written by a RowBinaryWriter, fields in the order of `columns`: `rows` is their
   * bytes, or their chunks in order (read once). `rowCount` (the writer does not know its rows)
   * is what `clickhouse_rows_written_total` counts.
   */
  async insertRowBinary(operation: string, table: string, columns: readonly string[], rows: Buffer | Iterable<Buffer>, rowCount = 0): Promise<void> {
    if (Buffer.isBuffer(rows) && rows.length === 0) return;
    for (const name of [table, ...columns]) if (!IDENTIFIER.test(name)) throw new Error(`invalid identifier ${name}`);
    const into = `INSERT INTO ${table} (${columns.join(", ")})`;
    const binaryRowsDir = this.injected?.binaryRowsDir;
    await this.timedInsert(table, rowCount, async () => {
      if (binaryRowsDir) return this.insertRowBinaryFile(operation, into, rows, binaryRowsDir);
      await this.timed(operation, async (query_id) => {
        const result = await this.client.exec({ query: `${into} FORMAT RowBinary`, values: Readable.from(Buffer.isBuffer(rows) ? [rows] : rows), query_id, clickhouse_settings: await this.writingSettings() });
        result.stream.resume();
        await new Promise((done, fail) => result.stream.once("end", done).once("error", fail));
      });
    });
  }

  /** An insert into `table`, timed by table; its rows counted once it succeeded. */
  private async timedInsert(table: string, rowCount: number, run: () => Promise<unknown>): Promise<void> {
    const end = insertDuration.startTimer({ table });
    try {
      await run();
      if (rowCount > 0) rowsWritten.inc({ table }, rowCount);
    } finally {
      end();
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /** The statement as sent: after a `USE` where the connection ignores the database option. */
  private statement(query: BuiltQuery): string {
    const sql = renderSql(query.sql, query.params);
    return this.injected?.ignoresDatabaseOption ? `USE ${this.database}; ${sql}` : sql;
  }

  /** RowBinary rows through a file the engine reads itself, for connections that cannot send binary bodies. */
  private async insertRowBinaryFile(operation: string, into: string, rows: Buffer | Iterable<Buffer>, dir: string): Promise<void> {
    const file = join(dir, `${operation}-${uuid4()}.bin`);
    await writeFile(file, rows);
    try {
      await this.command(operation, { sql: `${into} FROM INFILE ${quoteString(file)} FORMAT RowBinary`, params: {} });
    } finally {
      await rm(file, { force: true });
    }
  }

  /**
   * Settings of every write. Servers from 26.2 on turn `async_insert` on by default, which
   * buffers an insert server-side (a second batching after the worker's own) and, where a
   * profile also turns `wait_for_async_insert` off, answers before the rows are written:
   * our acknowledgements would then come before durability. Pinned off on servers that know
   * the setting; 18.16 does not know it and refuses unknown settings.
   */
  private writeSettings(): Promise<ClickHouseSettings> {
    this.writeSettingsOnce ??= this.client
      .query({ query: "SELECT name FROM system.settings WHERE name = 'async_insert'", format: "JSONEachRow" })
      .then((rs) => rs.json<{ name: string }>())
      .then((known): ClickHouseSettings => (known.length > 0 ? { async_insert: 0 } : {}))
      .catch((err: unknown) => {
        this.writeSettingsOnce = null;
        throw err;
      });
    return this.writeSettingsOnce;
  }

  /** Settings of a statement that writes: where reads go (`readSettings`), and `writeSettings`. */
  private async writingSettings(): Promise<ClickHouseSettings> {
    return { ...(await this.readSettings()), ...(await this.writeSettings()) };
  }

  /**
   * Settings of every statement: on a cluster, whether to read this node's own shard in-process
   * (CLUSTER_SETTINGS). Until the first replica answers whether it is this node, reads are
   * pinned as if it were not, and it is asked again FIRST_REPLICA_RETRY_MS later.
   */
  private readSettings(): Promise<ClickHouseSettings> {
    if (this.cluster === null) return NO_SETTINGS;
    if (this.readSettingsOnce === null || (this.readSettingsRetryAt > 0 && Date.now() >= this.readSettingsRetryAt)) {
      this.readSettingsRetryAt = 0;
      this.readSettingsOnce = this.isFirstReplica(this.cluster)
        .catch(() => {
          this.readSettingsRetryAt = Date.now() + FIRST_REPLICA_RETRY_MS;
          return false;
        })
        .then((first) => ({ prefer_localhost_replica: first ? 1 : 0 }));
    }
    return this.readSettingsOnce;
  }

  /**
   * Whether the node talked to is the first replica of its shard in `cluster`, the one every
   * process's reads and writes go to: its `replica` macro (which the Replicated tables'
   * paths need anyway, store/clusterSchema.ts) is the one the first replica answers.
   * 18.16 marks every replica of a shard with a local one as local, later servers only that
   * one: both find the first replica of this node's shard.
   */
  private async isFirstReplica(cluster: string): Promise<boolean> {
    const first = await this.client
      .query({ query: `SELECT host_address, port FROM system.clusters WHERE cluster = ${quoteString(cluster)} AND is_local = 1 AND replica_num = 1 LIMIT 1`, format: "JSONEachRow" })
      .then((rs) => rs.json<{ host_address: string; port: number }>());
    if (first.length === 0) return false;
    const address = first[0]!.host_address.includes(":") ? `[${first[0]!.host_address}]` : first[0]!.host_address;
    const replica = (from: string) => `(SELECT substitution FROM ${from} WHERE macro = 'replica')`;
    const same = await this.client
      .query({ query: `SELECT ${replica("system.macros")} = ${replica(`remote(${quoteString(`${address}:${first[0]!.port}`)}, system.macros)`)} AS same`, format: "JSONEachRow" })
      .then((rs) => rs.json<{ same: number }>());
    return Number(same[0]?.same) === 1;
  }

  private async timed<R>(operation: string, run: (queryId: string) => Promise<R>): Promise<R> {
    const end = queryDuration.startTimer({ operation });
    try {
      return await run(`${operation}-${uuid4()}`);
    } catch (err) {
      const wrapped = wrapError(err);
      if (wrapped instanceof StoreUnavailableError) this.unavailableAt = Date.now();
      throw wrapped;
    } finally {
      end();
    }
  }
}

/**
 * ClickHouse error codes that mean "try again later" (overload, timeouts, replicas busy, no
 * replica of some shard reachable: 279 on 18.16, 519 on newer servers; a replica's ZooKeeper
 * session expired under the statement, 225, until it has a new one); any other server error
 * is permanent. Errors without a server code are transport failures.
 */
const RETRYABLE_SERVER_CODES = new Set([159, 164, 202, 209, 210, 225, 241, 242, 252, 279, 319, 425, 519, 999]);

/**
 * The server's numeric error code: the `code` field the client library sets on server
 * errors, else the message head that 18.16 writes (`Code: 60, ...`). Read by shape, never
 * by `instanceof` of the library's class: a second copy of the library (another package's)
 * makes errors of another class.
 */
export function serverErrorCode(err: unknown): number | null {
  const field = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  if (typeof field === "string" && /^\d+$/.test(field)) return Number(field);
  if (typeof field === "number" && Number.isInteger(field)) return field;
  const head = err instanceof Error ? /^Code: (\d+)[,.]/.exec(err.message) : null;
  return head ? Number(head[1]) : null;
}

function wrapError(err: unknown): unknown {
  // Refused before anything was sent (a statement too long for the server, a placeholder without its value): not an outage.
  if (err instanceof ClientError || err instanceof SqlParamError) return err;
  const reason = errorText(err);
  const code = serverErrorCode(err);
  if (code === null || RETRYABLE_SERVER_CODES.has(code)) return new StoreUnavailableError(`ClickHouse unavailable: ${reason}`);
  return new StoreQueryError(code, reason);
}
