import { callKey, type CallKey, type CallsDeleteEvent } from "../queue/events.js";
import type { WrittenCall } from "../store/calls/callRows.js";
import type { CallDeletion, CallsWriteRepository } from "../store/calls/callsWrite.js";

/**
 * Deletes are resolved here, when the worker applies them, never at ingest (which would have
 * to read storage, and would miss calls still on their way). A deleted call takes every
 * descendant with it: calls stored before, calls of the same batch, and calls that arrive
 * later, whose parent is found deleted when they are written. A call whose own deletion came
 * first stays hidden when it arrives (reads leave out every id in `call_deletions`).
 *
 * Several writers may run at once (batches in flight, processes of a cluster), so each side
 * writes before it reads: a delete writes its deletions, then looks for their children; a
 * batch writes its calls, then looks for deletions of them and of their parents. Whatever the
 * interleaving, one of the two sees the other. The descent repeats from the calls it just
 * deleted until it finds nothing new, so a child written meanwhile under a call deleted in
 * one round is found in the next.
 *
 * Returns every call of the batch's concern that is now deleted: what the deletes reached,
 * and the batch's calls that were deleted before they came (for the thread aggregates).
 */
export async function applyDeletes(repo: CallsWriteRepository, deletes: readonly CallsDeleteEvent[], written: readonly WrittenCall[]): Promise<CallKey[]> {
  const asked = deletes.flatMap((d) => d.ids.map((id): CallDeletion => ({ project_id: d.project_id, id, deleted_at: d.deleted_at, wb_user_id: d.wb_user_id })));
  const { deletedBefore, underDeleted } = await coveredByStoredDeletes(repo, written);
  const reached = new Map<string, CallDeletion>();
  for (let round = [...asked, ...underDeleted]; round.length > 0; ) {
    const fresh = unseen(round, reached);
    if (fresh.length === 0) break;
    await repo.insertDeletions(fresh);
    const byKey = new Map(fresh.map((d) => [callKey(d), d]));
    const children = await repo.findChildren(fresh);
    round = children.map(({ child, parentId }) => inherit(child, byKey.get(callKey({ project_id: child.project_id, id: parentId }))!));
  }
  return [...reached.values(), ...deletedBefore];
}

/** The deletions in `round` not reached yet, once each; marks them reached. */
function unseen(round: readonly CallDeletion[], reached: Map<string, CallDeletion>): CallDeletion[] {
  const fresh: CallDeletion[] = [];
  for (const d of round) {
    const key = callKey(d);
    if (reached.has(key)) continue;
    reached.set(key, d);
    fresh.push(d);
  }
  return fresh;
}

/** A descendant is deleted when, and by whom, its ancestor was. */
const inherit = (call: CallKey, from: CallDeletion): CallDeletion => ({ project_id: call.project_id, id: call.id, deleted_at: from.deleted_at, wb_user_id: from.wb_user_id });

/**
 * The batch's calls that stored deletions already cover: deleted themselves before they came,
 * or children of a deleted call.
 */
async function coveredByStoredDeletes(repo: CallsWriteRepository, written: readonly WrittenCall[]): Promise<{ deletedBefore: CallKey[]; underDeleted: CallDeletion[] }> {
  const deletedBefore: CallKey[] = [];
  const underDeleted: CallDeletion[] = [];
  if (written.length === 0) return { deletedBefore, underDeleted };
  // Each call and its parent; the repository looks each up once, and only where its project holds deletions.
  const keys: CallKey[] = [];
  for (const c of written) {
    keys.push(c);
    if (c.parent_id !== null) keys.push({ project_id: c.project_id, id: c.parent_id });
  }
  const found = await repo.findDeletions(keys);
  if (found.size === 0) return { deletedBefore, underDeleted };
  for (const c of written) {
    const parent = c.parent_id === null ? undefined : found.get(callKey({ project_id: c.project_id, id: c.parent_id }));
    if (found.has(callKey(c))) deletedBefore.push(c);
    else if (parent) underDeleted.push(inherit(c, parent));
  }
  return { deletedBefore, underDeleted };
}
