import { MAX_LEAVES } from "./flatten.js";

/**
 * The targets a `calls` row references, found by the worker as it writes the row, for
 * `call_ref_bounds` (the retention rule: store/projects/expiredRefs.ts). The rule, over the row's
 * columns as stored:
 * - the refs of the project among `op_name` and the leaves (`json_values`): a string that
 *   starts `weave:///<entity>/<project>/<object|op|table>/<id>`, naming the target
 *   `object/<id>` (an op is an object) or `table/<id>`, its id URL-decoded;
 * - `file/<value>` for each leaf whose path has a `.files.` segment;
 * - when the leaves may not show every ref (MAX_LEAVES leaves, or a leaf holding a ref after
 *   other text), also the refs and `files` maps' digests written in the row's JSON text.
 * Migration 46's backfill applies the same rule in SQL (`CALL_REF_BOUNDS_SELECT`, which a
 * materialized view ran on every insert until migration 50); test/calls/refTargets.test.ts
 * holds the two to the same rows. Done here, a row without a ref costs ClickHouse nothing
 * (the view built its arrays for every row), and a batch's rows naming one target make one
 * row of `call_ref_bounds`.
 */

const SCHEME = "weave:///";
const TARGET_KINDS = new Set(["object", "op", "table"]);
/** re2's `\s`, which the SQL form of the rule uses (JavaScript's `\s` holds more). */
const SPACE = "[\\t\\n\\f\\r ]";
const TEXT_REFS = /weave:\/\/\/[^"]*/g;
const FILES_MAPS = new RegExp(`"files":${SPACE}*\\{[^{}]*\\}`, "g");
const FILES_MAP_VALUES = new RegExp(`:${SPACE}*"([^"]*)"`, "g");

/** What of a call's row the rule reads. */
export interface CallRefSource {
  readonly projectId: string;
  readonly opName: string;
  /** `json_values`, as stored (cut leaves). */
  readonly values: readonly string[];
  /** The file leaves among them (flatten.ts, `FlattenedRow.fileLeaves`). */
  readonly fileLeaves: readonly string[];
  /** The row's JSON text (attributes, inputs, output, summary), asked for only when the leaves may miss a ref. */
  readonly jsonText: () => string;
}

/** The targets of the row's leaves (and of its JSON text when the leaves may miss some), added to `found`. */
function leafRefTargets(row: CallRefSource, found: string[]): void {
  const ref = (text: string): void => {
    const target = projectRefTarget(text, row.projectId);
    if (target !== null) found.push(target);
  };
  let refInText = false;
  for (const value of row.values) {
    // Most leaves hold no ref: one search tells both whether a leaf is one and whether it holds one after other text.
    const at = value.indexOf(SCHEME);
    if (at === 0) ref(value);
    else if (at > 0) refInText = true;
  }
  for (const value of row.fileLeaves) found.push(`file/${value}`);
  if (refInText || row.values.length >= MAX_LEAVES) {
    const text = row.jsonText();
    for (const [match] of text.matchAll(TEXT_REFS)) ref(match);
    for (const [map] of text.matchAll(FILES_MAPS)) for (const [, digest] of map.matchAll(FILES_MAP_VALUES)) found.push(`file/${digest}`);
  }
}

/**
 * The target a string names when it is a ref to an object, op or table of the project, else
 * null. The parts are ClickHouse's `splitByChar('/', ref)` (a missing part is empty).
 */
function projectRefTarget(text: string, projectId: string): string | null {
  if (!text.startsWith(SCHEME)) return null;
  const parts = text.split("/");
  const kind = parts[5] ?? "";
  if (!TARGET_KINDS.has(kind) || `${parts[3] ?? ""}/${parts[4] ?? ""}` !== projectId) return null;
  const id = decodeUrlComponent(parts[6] ?? "");
  return id === null ? null : `${kind === "op" ? "object" : kind}/${id}`;
}

const hexValue = (byte: number): number =>
  byte >= 0x30 && byte <= 0x39 ? byte - 0x30 : byte >= 0x41 && byte <= 0x46 ? byte - 0x37 : byte >= 0x61 && byte <= 0x66 ? byte - 0x57 : -1;

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * ClickHouse's `decodeURLComponent` over the UTF-8 of `text`: each `%` followed by two hex
 * digits is the byte they spell; a `%` that is not steps over itself and the two bytes after
 * it, copied as they are; fewer than three bytes from a `%` to the end are copied. Null when
 * the bytes decoded are not UTF-8: no target stored here can have such a name (object ids,
 * digests are text), so a call naming one references nothing that retention could remove.
 */
export function decodeUrlComponent(text: string): string | null {
  if (!text.includes("%")) return text;
  const bytes = Buffer.from(text, "utf8");
  const out = Buffer.allocUnsafe(bytes.length);
  let length = 0;
  let at = 0;
  while (at < bytes.length) {
    if (bytes[at] !== 0x25 || bytes.length - at < 3) {
      out[length++] = bytes[at++]!;
      continue;
    }
    const high = hexValue(bytes[at + 1]!);
    const low = hexValue(bytes[at + 2]!);
    if (high >= 0 && low >= 0) out[length++] = high * 16 + low;
    else for (let i = 0; i < 3; i++) out[length++] = bytes[at + i]!;
    at += 3;
  }
  try {
    return UTF8.decode(out.subarray(0, length));
  } catch {
    return null;
  }
}

/** A `call_ref_bounds` row. */
export interface RefBound {
  readonly project_id: string;
  readonly target: string;
  readonly started_at: number;
}

/** A project's targets in one insert: the newest start of each, and what each `op_name` names (a batch's calls share a few). */
interface ProjectRefs {
  readonly newest: Map<string, number>;
  readonly opTargets: Map<string, string | null>;
}

/**
 * The `call_ref_bounds` rows of the calls of one insert: per project and target, the newest
 * `started_at` (the table keeps the newest, and reads take the newest).
 */
export class RefBounds {
  private readonly projects = new Map<string, ProjectRefs>();

  add(row: CallRefSource, startedAt: number): void {
    let project = this.projects.get(row.projectId);
    if (project === undefined) this.projects.set(row.projectId, (project = { newest: new Map(), opTargets: new Map() }));
    let op = project.opTargets.get(row.opName);
    if (op === undefined) project.opTargets.set(row.opName, (op = projectRefTarget(row.opName, row.projectId)));
    const found: string[] = op === null ? [] : [op];
    leafRefTargets(row, found);
    for (const target of found) {
      const held = project.newest.get(target);
      if (held === undefined || held < startedAt) project.newest.set(target, startedAt);
    }
  }

  rows(): RefBound[] {
    const rows: RefBound[] = [];
    for (const [project_id, { newest }] of this.projects) for (const [target, started_at] of newest) rows.push({ project_id, target, started_at });
    return rows;
  }
}
