import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";
import { opDisplayName } from "../store/calls/computedFields.js";
import type { Fit } from "./bounded.js";

/**
 * What the tools show of a call, made from the API call the REST routes answer
 * (query/callsRoutes.ts `viewCalls`): the op by the name the UI shows, the status and latency
 * computed there (`summary.weave`), user values cut through the answer's `Fit`.
 */
export type ApiCall = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const json = (v: unknown): JsonValue => (v === undefined ? null : (v as JsonValue));

function weaveOf(call: ApiCall): JsonObject {
  const summary = call["summary"];
  const weave = isJsonObject(summary) ? summary["weave"] : null;
  return isJsonObject(weave) ? (weave as JsonObject) : {};
}

/** The op as the UI names it, and the full op ref when the stored op name is one. */
function opOf(call: ApiCall): { op_name: string; op_ref?: string } {
  const stored = str(call["op_name"]) ?? "";
  const shown = opDisplayName(stored);
  return shown === stored ? { op_name: shown } : { op_name: shown, op_ref: stored };
}

/** Status, times and latency, shared by every view. */
function outcome(call: ApiCall, fit: Fit): JsonObject {
  const weave = weaveOf(call);
  const exception = str(call["exception"]);
  return {
    status: json(weave["status"]),
    ...(exception === null ? {} : { exception: fit.text(exception) }),
    started_at: json(call["started_at"]),
    ended_at: json(call["ended_at"]),
    latency_ms: json(weave["latency_ms"]),
  };
}

/** A call in a list: who it is, how it went, and a preview of its inputs and output. */
export function briefCall(call: ApiCall, fit: Fit): JsonObject {
  const display = str(call["display_name"]);
  return {
    id: json(call["id"]),
    trace_id: json(call["trace_id"]),
    parent_id: json(call["parent_id"]),
    ...opOf(call),
    ...(display ? { display_name: display } : {}),
    ...outcome(call, fit),
    inputs_preview: fit.preview(json(call["inputs"])),
    output_preview: fit.preview(json(call["output"])),
  };
}

/** A call in a trace's tree: its op, outcome, inputs and output (its place in the tree says the rest). */
export function treeCall(call: ApiCall, fit: Fit): JsonObject {
  const display = str(call["display_name"]);
  return {
    id: json(call["id"]),
    op_name: opOf(call).op_name,
    ...(display ? { display_name: display } : {}),
    ...outcome(call, fit),
    inputs: fit.value(json(call["inputs"])),
    output: fit.value(json(call["output"])),
  };
}

/** One call whole: every field a client reads but the computed `summary.weave`, which `outcome` shows. */
export function fullCall(call: ApiCall, fit: Fit): JsonObject {
  const summary = isJsonObject(call["summary"]) ? { ...call["summary"] } : {};
  delete summary["weave"];
  return {
    id: json(call["id"]),
    trace_id: json(call["trace_id"]),
    parent_id: json(call["parent_id"]),
    thread_id: json(call["thread_id"]),
    turn_id: json(call["turn_id"]),
    ...opOf(call),
    display_name: json(call["display_name"]),
    ...outcome(call, fit),
    inputs: fit.value(json(call["inputs"])),
    output: fit.value(json(call["output"])),
    attributes: fit.value(json(call["attributes"])),
    summary: fit.value(summary as JsonObject),
    wb_user_id: json(call["wb_user_id"]),
  };
}

/** The feedback `include_feedback` put into the call's `summary.weave.feedback`. */
export function feedbackOf(call: ApiCall): JsonObject[] {
  const feedback = weaveOf(call)["feedback"];
  return Array.isArray(feedback) ? feedback.filter((f): f is JsonObject => isJsonObject(f)) : [];
}

export interface TreeNode {
  readonly call: ApiCall;
  readonly children: TreeNode[];
}

/**
 * The calls of a trace nested by parent. A call whose parent is not among them (not stored
 * yet, deleted, or past what was read) is a root, so that every call read shows once; so is
 * the first call of a loop of parents (written so by a client), which is cut there.
 */
export function nestCalls(calls: readonly ApiCall[]): TreeNode[] {
  const nodes = new Map<string, TreeNode>();
  for (const call of calls) nodes.set(String(call["id"]), { call, children: [] });
  const parentOf = (node: TreeNode) => nodes.get(str(node.call["parent_id"]) ?? "");
  const roots: TreeNode[] = [];
  for (const node of nodes.values()) {
    const above = parentOf(node);
    if (above && above !== node) above.children.push(node);
    else roots.push(node);
  }
  const reached = new Set<TreeNode>();
  const reach = (from: TreeNode) => {
    for (const stack = [from]; stack.length > 0; ) {
      const node = stack.pop()!;
      reached.add(node);
      stack.push(...node.children);
    }
  };
  roots.forEach(reach);
  for (const node of nodes.values()) {
    if (reached.has(node)) continue;
    const above = parentOf(node)!;
    above.children.splice(above.children.indexOf(node), 1);
    roots.push(node);
    reach(node);
  }
  return roots;
}

/**
 * The tree as the answer shows it: calls in order (parents before children, siblings by start)
 * until the fit's item budget is spent; the calls left out are counted in the note.
 */
export function showTree(roots: readonly TreeNode[], fit: Fit): JsonObject[] {
  let budget = fit.items;
  let left = 0;
  const count = (node: TreeNode): number => 1 + node.children.reduce((n, c) => n + count(c), 0);
  const show = (node: TreeNode): JsonObject | null => {
    if (budget <= 0) {
      left += count(node);
      return null;
    }
    budget -= 1;
    const shown = treeCall(node.call, fit);
    const children = node.children.map(show).filter((c): c is JsonObject => c !== null);
    if (node.children.length > 0) shown["children"] = children;
    return shown;
  };
  const shown = roots.map(show).filter((c): c is JsonObject => c !== null);
  if (left > 0) fit.shorten(`${left} calls of the tree left out (the first ${fit.items} in order are shown)`);
  return shown;
}
