import { ClickHouseLogLevel, createClient, type ClickHouseClient } from "@clickhouse/client";
import { Readable } from "node:stream";
import { Histogram } from "prom-client";
import { StoreQueryError, StoreUnavailableError } from "../errors.js";
import { uuid4 } from "../ids.js";
import { readStringColumn } from "./rowBinary.js";
import { renderSql, type BuiltQuery } from "./sql.js";

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const queryDuration = new Histogram({
  name: "clickhouse_query_seconds",
  help: "ClickHouse query time by operation",
  labelNames: ["operation"],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

/**
 * ClickHouse over HTTP. Every call names its operation: it becomes the query_id prefix
 * (so system.query_log leads back to the code path) and the metric label.
 */
export class ClickHouseStore {
  private readonly client: ClickHouseClient;

  constructor(readonly url: string, readonly database: string) {
    this.client = createClient({
      url,
      database,
      request_timeout: 60_000,
      max_open_connections: 32,
      clickhouse_settings: {},
      log: { level: ClickHouseLogLevel.OFF },
    });
  }

  async ping(): Promise<boolean> {
    const result = await this.client.ping();
    return result.success;
  }

  async rows<T>(operation: string, query: BuiltQuery): Promise<T[]> {
    return this.timed(operation, async (query_id) => {
      const rs = await this.client.query({ query: renderSql(query.sql, query.params), format: "JSONEachRow", query_id });
      return rs.json<T>();
    });
  }

  /** Streams rows as they arrive; the caller consumes them with `for await`. */
  async *stream<T>(operation: string, query: BuiltQuery): AsyncGenerator<T> {
    const end = queryDuration.startTimer({ operation });
    try {
      const rs = await this.client.query({
        query: renderSql(query.sql, query.params),
        format: "JSONEachRow",
        query_id: `${operation}-${uuid4()}`,
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
      const result = await this.client.exec({ query: `${renderSql(query.sql, query.params)} FORMAT RowBinary`, query_id: `${operation}-${uuid4()}` });
      stream = result.stream;
      yield* readStringColumn(stream, maxValueBytes);
    } catch (err) {
      throw wrapError(err);
    } finally {
      if (stream && !stream.readableEnded) stream.destroy();
      end();
    }
  }

  async command(operation: string, query: BuiltQuery): Promise<void> {
    await this.timed(operation, (query_id) =>
      this.client.command({ query: renderSql(query.sql, query.params), query_id }),
    );
  }

  async insert<T extends object>(operation: string, table: string, rows: readonly T[]): Promise<void> {
    if (rows.length === 0) return;
    await this.timed(operation, (query_id) =>
      this.client.insert({ table, values: rows as T[], format: "JSONEachRow", query_id }),
    );
  }

  /** Inserts rows written by a RowBinaryWriter, fields in the order of `columns`. */
  async insertRowBinary(operation: string, table: string, columns: readonly string[], rows: Buffer): Promise<void> {
    if (rows.length === 0) return;
    for (const name of [table, ...columns]) if (!IDENTIFIER.test(name)) throw new Error(`invalid identifier ${name}`);
    await this.timed(operation, async (query_id) => {
      const result = await this.client.exec({ query: `INSERT INTO ${table} (${columns.join(", ")}) FORMAT RowBinary`, values: Readable.from([rows]), query_id });
      result.stream.resume();
      await new Promise((done, fail) => result.stream.once("end", done).once("error", fail));
    });
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private async timed<R>(operation: string, run: (queryId: string) => Promise<R>): Promise<R> {
    const end = queryDuration.startTimer({ operation });
    try {
      return await run(`${operation}-${uuid4()}`);
    } catch (err) {
      throw wrapError(err);
    } finally {
      end();
    }
  }
}

/**
 * ClickHouse error codes that mean "try again later" (overload, timeouts, replicas busy);
 * any other server error is permanent. Errors without a server code are transport failures.
 */
const RETRYABLE_SERVER_CODES = new Set([159, 164, 202, 209, 210, 241, 242, 252, 319, 425, 999]);

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
  const reason = err instanceof Error ? err.message : String(err);
  const code = serverErrorCode(err);
  if (code === null || RETRYABLE_SERVER_CODES.has(code)) return new StoreUnavailableError(`ClickHouse unavailable: ${reason}`);
  return new StoreQueryError(code, reason);
}
