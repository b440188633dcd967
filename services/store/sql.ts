/**
 * The one path by which values reach SQL. (The worker's inserts need no escaping: they
 * are length-prefixed RowBinary, `rowBinary.ts`.)
 *
 * ClickHouse 18.16 has no server-side query parameters, so queries are written with
 * typed placeholders (`{pb_0:String}`, the syntax newer servers bind natively) and rendered
 * to literals by `renderSql`, which escapes every value through `quoteString`.
 * Identifiers never come from input: they come from typed field definitions.
 */
import { QueryTooLargeError } from "../errors.js";

export type SqlType = "String" | "Int64" | "UInt64" | "Float64" | "Array(String)" | "Array(Int64)" | "Array(UInt64)";
export type SqlValue = string | number | bigint | boolean | readonly string[] | readonly number[] | readonly bigint[];

export interface SqlParam {
  readonly type: SqlType;
  readonly value: SqlValue;
}

export class SqlParamError extends Error {}

const NEEDS_QUOTED_ESCAPE = /[\\'\0\n\r\t]/;
const CONTROL = /[\0\n\r\t]/;

/** Backslash escapes for the control characters; plain string replaces (no callback) are several times faster. */
function escapeControls(value: string): string {
  if (!CONTROL.test(value)) return value;
  return value.replace(/\n/g, "\\n").replace(/\t/g, "\\t").replace(/\r/g, "\\r").replace(/\0/g, "\\0");
}

const escapeBackslashes = (value: string): string => (value.includes("\\") ? value.replace(/\\/g, "\\\\") : value);

/** Escapes a string as a ClickHouse single-quoted literal that reads back exactly. */
export function quoteString(value: string): string {
  if (!NEEDS_QUOTED_ESCAPE.test(value)) return `'${value}'`;
  const escaped = escapeControls(escapeBackslashes(value));
  return `'${escaped.includes("'") ? escaped.replace(/'/g, "\\'") : escaped}'`;
}

function integerLiteral(value: SqlValue, type: SqlType): string {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (typeof value === "boolean") return value ? "1" : "0";
  throw new SqlParamError(`expected an integer for ${type}, got ${String(value)}`);
}

function floatLiteral(value: SqlValue): string {
  if (typeof value === "number" && Number.isFinite(value)) {
    const text = String(value);
    return /[.eE]/.test(text) ? text : `${text}.0`;
  }
  if (typeof value === "boolean") return value ? "1.0" : "0.0";
  throw new SqlParamError(`expected a finite number for Float64, got ${String(value)}`);
}

/** Renders one typed value as a SQL literal. */
export function literal(param: SqlParam): string {
  const { type, value } = param;
  switch (type) {
    case "String":
      if (typeof value !== "string") throw new SqlParamError(`expected a string, got ${typeof value}`);
      return quoteString(value);
    case "Int64":
      return `toInt64(${integerLiteral(value, type)})`;
    case "UInt64": {
      // A bare literal: LIMIT and OFFSET take no expressions.
      const text = integerLiteral(value, type);
      if (text.startsWith("-")) throw new SqlParamError(`expected a non-negative integer for UInt64, got ${text}`);
      return text;
    }
    case "Float64":
      return `toFloat64(${floatLiteral(value)})`;
    case "Array(String)":
      if (!Array.isArray(value)) throw new SqlParamError("expected an array of strings");
      return `CAST([${(value as unknown[]).map((v) => quoteString(String(v))).join(", ")}] AS Array(String))`;
    case "Array(Int64)":
      if (!Array.isArray(value)) throw new SqlParamError("expected an array of integers");
      return `CAST([${(value as unknown[]).map((v) => integerLiteral(v as SqlValue, type)).join(", ")}] AS Array(Int64))`;
    case "Array(UInt64)": {
      if (!Array.isArray(value)) throw new SqlParamError("expected an array of non-negative integers");
      const texts = (value as unknown[]).map((v) => integerLiteral(v as SqlValue, type));
      if (texts.some((t) => t.startsWith("-"))) throw new SqlParamError("expected non-negative integers for Array(UInt64)");
      return `CAST([${texts.join(", ")}] AS Array(UInt64))`;
    }
  }
}

const PLACEHOLDER = /\{(pb_\d+):([A-Za-z0-9()]+)\}/g;

/**
 * Substitutes every `{pb_N:Type}` placeholder with its escaped literal. A statement whose
 * parsed text comes out longer than ClickHouse parses is refused (QueryTooLargeError, 413).
 */
export function renderSql(sql: string, params: Readonly<Record<string, SqlParam>>): string {
  const rendered = sql.replace(PLACEHOLDER, (_match, name: string, type: string) => {
    const param = params[name];
    if (!param) throw new SqlParamError(`no value for placeholder ${name}`);
    if (param.type !== type) throw new SqlParamError(`placeholder ${name} is ${type}, value is ${param.type}`);
    return literal(param);
  });
  checkQuerySize(rendered);
  return rendered;
}

/**
 * ClickHouse's default `max_query_size`, less room for a `USE <database>;` prefix: the most
 * bytes of a statement's text the server parses. The data of an `INSERT ... VALUES` is read
 * by the format parser instead and is not counted.
 */
export const MAX_QUERY_BYTES = 256 * 1024 - 256;

function checkQuerySize(statement: string): void {
  // A UTF-16 unit is at most 3 UTF-8 bytes: short statements need no count.
  if (statement.length * 3 <= MAX_QUERY_BYTES) return;
  const values = /^\s*INSERT\b/i.test(statement) ? statement.search(/\bVALUES\b/) : -1;
  const parsed = values < 0 ? statement : statement.slice(0, values);
  const bytes = Buffer.byteLength(parsed, "utf8");
  if (bytes > MAX_QUERY_BYTES) throw new QueryTooLargeError(bytes, MAX_QUERY_BYTES);
}

/**
 * Collects parameters while a query is built; names are deterministic (`pb_0`, `pb_1`, ...)
 * so tests can assert the exact SQL and parameters.
 */
export class ParamBuilder {
  private readonly values: Record<string, SqlParam> = {};
  private next = 0;

  add(value: SqlValue, type: SqlType): string {
    const name = `pb_${this.next++}`;
    this.values[name] = { type, value };
    return `{${name}:${type}}`;
  }

  str(value: string): string {
    return this.add(value, "String");
  }

  int(value: number | bigint): string {
    return this.add(value, "Int64");
  }

  /** A non-negative integer rendered bare, for LIMIT and OFFSET. */
  count(value: number): string {
    return this.add(value, "UInt64");
  }

  /** `LIMIT [offset, ]limit` for a page; an offset alone pages to the end; nothing when neither. */
  limitOffset(limit: number | null | undefined, offset: number | null | undefined): string {
    if (limit !== null && limit !== undefined) return `LIMIT ${offset ? `${this.count(offset)}, ` : ""}${this.count(limit)}`;
    return offset ? `LIMIT ${this.count(offset)}, ${this.count(Number.MAX_SAFE_INTEGER)}` : "";
  }

  float(value: number): string {
    return this.add(value, "Float64");
  }

  strings(values: readonly string[]): string {
    return this.add(values, "Array(String)");
  }

  /** The right-hand side of `x IN ...` for a list of strings (18.16 takes no array there). */
  inStrings(values: readonly string[]): string {
    return `(SELECT arrayJoin(${this.strings(values)}))`;
  }

  /** The right-hand side of `x IN ...` for a list of UInt64 keys (row keys). */
  inUInt64s(values: readonly bigint[]): string {
    return `(SELECT arrayJoin(${this.add(values, "Array(UInt64)")}))`;
  }

  inInts(values: readonly number[]): string {
    return `(SELECT arrayJoin(${this.add(values, "Array(Int64)")}))`;
  }

  get params(): Readonly<Record<string, SqlParam>> {
    return this.values;
  }
}

/**
 * Ids named per query (`IN` lists): at most IDS_PER_QUERY ids and ID_CHARS_PER_QUERY
 * characters of ids, so that the rendered SQL stays well below ClickHouse's
 * max_query_size (256 KiB) even when a query names its ids twice, whatever the batch.
 */
const IDS_PER_QUERY = 1000;
const ID_CHARS_PER_QUERY = 60_000;

/** `ids` in slices small enough to be named in one query. */
export function* idChunks(ids: readonly string[]): Generator<string[]> {
  let chunk: string[] = [];
  let chars = 0;
  for (const id of ids) {
    if (chunk.length > 0 && (chunk.length >= IDS_PER_QUERY || chars + id.length > ID_CHARS_PER_QUERY)) {
      yield chunk;
      chunk = [];
      chars = 0;
    }
    chunk.push(id);
    chars += id.length;
  }
  if (chunk.length > 0) yield chunk;
}

/** A query ready to send: SQL with placeholders, its parameters, and the operation name. */
export interface BuiltQuery {
  readonly sql: string;
  readonly params: Readonly<Record<string, SqlParam>>;
}

/**
 * `tupleElement(tuple, index)` for an element that is then subscripted: a query on a
 * cluster is written out again for the shards, and 18.16 writes `tupleElement(t, 3)[i]` as
 * `t.3[i]`, which it then cannot parse; a constant expression as the index keeps the call form.
 */
export function tupleElementSql(tuple: string, index: number): string {
  if (!Number.isInteger(index) || index < 1 || index > 255) throw new Error(`invalid tuple index ${index}`);
  return `tupleElement(${tuple}, toUInt8(${index}))`;
}
