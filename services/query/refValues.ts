import { ClientError, NotFoundError, RefParseError } from "../errors.js";
import { formatRef, parseRef, projectIdOf, type RefPathPart, type WeaveRef } from "../refs.js";
import { documentSpan, elementSpans, memberSpan, type Span } from "./jsonSpans.js";

/**
 * Resolves refs to the JSON text of the values they name (`/refs/read_batch`), losslessly:
 * stored values are JSON text and paths are walked through that text (jsonSpans.ts), never
 * through parsed numbers.
 *
 * Semantics (those of the Weave trace server where it defines them):
 * - `key` and `attr` take a member of an object (an object's attributes are its dict keys),
 *   `index` an element of a list (negative counts from the end), `id` a row of a table by
 *   its digest; a step that finds nothing (no such key, index out of range, a step into a
 *   scalar) makes the value null;
 * - a step that lands on a ref string with steps left follows that ref, then takes the
 *   steps left (a Dataset's `attr/rows` is a table ref, `id/<digest>` then reads a row); a
 *   ref string at the end of the path is answered as the string;
 * - a nested ref into another project than the ref it was reached from is not followed: the
 *   value is null (the key was only checked against the projects of the refs requested);
 * - the root of a ref (an object version, a table, a table row, a call) that does not exist
 *   → NotFoundError naming the ref.
 *
 * Store reads are batched by round: every root the refs still need is read at once, grouped
 * (object versions per project, rows per table, calls per project), so 1,000 row refs of one
 * table cost a few queries.
 */

/** Most nested refs followed from one ref (a loop of call refs must end). */
const MAX_ROUNDS = 16;

/** Where stored values come from (refsRoutes.ts wires the repositories). */
export interface RefSources {
  /** The JSON text of object (or op) versions in request order; null for one that does not exist or was deleted. */
  objects(projectId: string, versions: readonly { objectId: string; digest: string }[]): Promise<(string | null)[]>;
  /** The JSON text of rows of a table, by digest (absent: not in the table); null when the table does not exist. */
  tableRows(projectId: string, tableDigest: string, rowDigests: readonly string[]): Promise<Map<string, string> | null>;
  /** The JSON text of a table's rows as a list, in table order; null when the table does not exist. */
  table(projectId: string, tableDigest: string): Promise<string | null>;
  /** The JSON text of calls as /call/read answers them, by id (absent: no such call). */
  calls(projectId: string, callIds: readonly string[]): Promise<Map<string, string>>;
}

/** A root still to read: a ref without its path (a table row: the table ref and its first `id` step). */
interface Pending {
  readonly kind: "pending";
  readonly root: WeaveRef;
  /** The root as text (rootKey), computed once. */
  readonly key: string;
  readonly steps: readonly RefPathPart[];
}

interface Done {
  readonly kind: "done";
  readonly text: string;
}

type State = Pending | Done;

const NULL: Done = { kind: "done", text: "null" };

/** The ref as a root to read and the steps to take in its value. */
function pending(ref: WeaveRef, after: readonly RefPathPart[] = []): State {
  const steps = [...ref.extra, ...after];
  if (ref.kind === "table" && steps.length > 0) {
    const [first, ...rest] = steps;
    // A table's value is reached only by a row id (checked for requested refs by the contract).
    return first!.edge === "id" ? pendingRoot({ ...ref, extra: [first!] }, rest) : NULL;
  }
  return pendingRoot({ ...ref, extra: [] }, steps);
}

function pendingRoot(root: WeaveRef, steps: readonly RefPathPart[]): Pending {
  const key = formatRef(root);
  rootKeys.set(root, key);
  return { kind: "pending", root, key, steps };
}

/** The text of the roots pendingRoot made (each written once per request, not at every lookup). */
const rootKeys = new WeakMap<WeaveRef, string>();
const rootKey = (root: WeaveRef): string => rootKeys.get(root) ?? formatRef(root);

export class RefResolver {
  constructor(private readonly sources: RefSources) {}

  /** The JSON text of each ref's value, in order (refs already checked by the contract). */
  async resolve(refs: readonly string[]): Promise<string[]> {
    return this.run(refs, (root, i) => {
      throw notFound(root, refs[i]!);
    });
  }

  /**
   * As `resolve`, but a ref whose root (or a root reached through it) does not exist, or
   * whose path leads nowhere, is null instead of an error (`expand_columns` keeps such refs).
   */
  async resolveOrNull(refs: readonly string[]): Promise<(string | null)[]> {
    const texts = await this.run(refs, () => NULL);
    return texts.map((text) => (text === "null" ? null : text));
  }

  private async run(refs: readonly string[], missing: (root: WeaveRef, i: number) => State): Promise<string[]> {
    const scopes = refs.map((text) => projectIdOf(parseRef(text)));
    let states = refs.map((text) => pending(parseRef(text)));
    for (let round = 0; states.some((s) => s.kind === "pending"); round++) {
      if (round >= MAX_ROUNDS) throw new ClientError(400, `refs nest more than ${MAX_ROUNDS} deep`);
      const values = await this.readRoots(states.flatMap((s) => (s.kind === "pending" ? [s] : [])));
      states = states.map((state, i) => {
        if (state.kind === "done") return state;
        const text = values.get(state.key);
        if (text === undefined) return missing(state.root, i);
        return walk(text, state.steps, scopes[i]!);
      });
    }
    return states.map((s) => (s as Done).text);
  }

  /** The text of every root that exists, by rootKey. */
  private async readRoots(roots: readonly Pending[]): Promise<Map<string, string>> {
    const unique = new Map(roots.map((r) => [r.key, r.root]));
    const found = new Map<string, string>();
    const groups = groupBy([...unique.values()], groupOf);
    await Promise.all([...groups.values()].map((group) => this.readGroup(group, found)));
    return found;
  }

  private async readGroup(group: readonly WeaveRef[], found: Map<string, string>): Promise<void> {
    const first = group[0]!;
    const projectId = projectIdOf(first);
    if (first.kind === "object" || first.kind === "op") {
      const versions = group.map((r) => (r.kind === "object" || r.kind === "op" ? { objectId: r.name, digest: r.digest } : unreachable()));
      const texts = await this.sources.objects(projectId, versions);
      group.forEach((r, i) => setFound(found, r, texts[i] ?? null));
    } else if (first.kind === "call") {
      const calls = await this.sources.calls(projectId, group.map((r) => (r.kind === "call" ? r.callId : unreachable())));
      for (const r of group) if (r.kind === "call") setFound(found, r, calls.get(r.callId) ?? null);
    } else if (first.kind === "table" && first.extra.length === 0) {
      setFound(found, first, await this.sources.table(projectId, first.digest));
    } else if (first.kind === "table") {
      const rows = await this.sources.tableRows(projectId, first.digest, group.map((r) => r.extra[0]!.value));
      for (const r of group) setFound(found, r, rows?.get(r.extra[0]!.value) ?? null);
    }
  }
}

/** Roots read together: object versions and calls per project, rows per table, whole tables one by one. */
function groupOf(root: WeaveRef): string {
  const project = projectIdOf(root);
  if (root.kind === "object" || root.kind === "op") return `objects ${project}`;
  if (root.kind === "call") return `calls ${project}`;
  return `${root.extra.length === 0 ? "table" : "rows"} ${project} ${root.digest}`;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

function setFound(found: Map<string, string>, root: WeaveRef, text: string | null): void {
  if (text !== null) found.set(rootKey(root), text);
}

function unreachable(): never {
  throw new Error("a group holds roots of one kind");
}

function notFound(root: WeaveRef, requested: string): NotFoundError {
  const where = `in project ${projectIdOf(root)}`;
  const what =
    root.kind === "call" ? `call ${JSON.stringify(root.callId)} not found ${where}`
    : root.kind === "table" && root.extra.length > 0 ? `table ${root.digest} has no row ${root.extra[0]!.value} ${where} (or the table does not exist)`
    : root.kind === "table" ? `table ${root.digest} not found ${where}`
    : `${root.kind} ${JSON.stringify(root.name)} has no live version ${root.digest} ${where}`;
  const reached = rootKey(root) === requested ? "" : ` (reached through ${rootKey(root)})`;
  return new NotFoundError(`ref ${requested} not found${reached}: ${what}`);
}

/** Takes the steps in the value's text; follows a ref string met with steps left (as a new root). */
function walk(text: string, steps: readonly RefPathPart[], scope: string): State {
  let span = documentSpan(text);
  for (let i = 0; i < steps.length; i++) {
    const ref = refAt(text, span);
    if (ref) return projectIdOf(ref) === scope ? pending(ref, steps.slice(i)) : NULL;
    const next = stepInto(text, span, steps[i]!);
    if (next === null) return NULL;
    span = next;
  }
  return { kind: "done", text: span.start === 0 && span.end === text.length ? text : text.slice(span.start, span.end) };
}

/** The ref a JSON string value holds, or null (not a string, or not a well-formed ref). */
function refAt(text: string, span: Span): WeaveRef | null {
  if (text.charCodeAt(span.start) !== 34 || !text.startsWith('"weave:///', span.start)) return null;
  try {
    return parseRef(JSON.parse(text.slice(span.start, span.end)) as string);
  } catch (e) {
    if (e instanceof RefParseError) return null;
    throw e;
  }
}

function stepInto(text: string, span: Span, step: RefPathPart): Span | null {
  if (step.edge === "key" || step.edge === "attr") return memberSpan(text, span, step.value);
  if (step.edge === "index") {
    const elements = [...elementSpans(text, span)];
    const n = Number(step.value);
    const i = n < 0 ? elements.length + n : n;
    return Number.isInteger(i) ? elements[i] ?? null : null;
  }
  // `id` reads a table row: only a table ref has rows.
  return null;
}
