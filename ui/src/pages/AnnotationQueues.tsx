import { useState } from "react";
import { getJson, postJson, postLines } from "../api";
import type { ProjectRef } from "../project";
import { ErrorBox, Loading, Section } from "../components/common";
import { FeedbackPanel, type ScoreField } from "../components/Feedback";
import { JsonView, parseRef } from "../components/JsonView";
import { formatTime, opName } from "../format";
import { useAction, useLoad } from "../hooks";
import { Link, seg } from "../router";
import type { AnnotationQueue, AnnotationQueueItem, AnnotationState, Call, Json } from "../types";

/**
 * Annotation queues (`/annotation_queues/*`): the list with each queue's progress, and a
 * queue gone through item by item: the call's display fields, feedback (reactions, notes and
 * the queue's scores), then the item marked completed or skipped (the key user's progress).
 */
const MAX_QUEUES = 1000;
const MAX_ITEMS = 10_000;
const DONE: readonly AnnotationState[] = ["completed", "skipped"];

interface QueueStats {
  queue_id: string;
  total_items: number;
  completed_items: number;
}

export function AnnotationQueuesPage({ project }: { project: ProjectRef }) {
  const queues = useLoad(async (signal) => {
    const list = await postLines<AnnotationQueue>("/annotation_queues/query", { project_id: project.projectId, limit: MAX_QUEUES }, signal);
    const stats = list.length === 0 ? [] : (await postJson<{ stats: QueueStats[] }>("/annotation_queues/stats", { project_id: project.projectId, queue_ids: list.map((q) => q.id) }, signal)).stats;
    return { list, stats: new Map(stats.map((s) => [s.queue_id, s])) };
  }, [project.projectId]);
  const list = queues.data?.list ?? [];
  return (
    <div className="page">
      <h2>Annotation queues</h2>
      <ErrorBox error={queues.error} />
      <Loading when={queues.loading} />
      {!queues.loading && list.length === 0 && !queues.error && <p className="muted">No annotation queues: create one with `POST /annotation_queues` and add calls to it.</p>}
      {list.length > 0 && (
        <table className="plain" aria-label="Annotation queues">
          <thead>
            <tr>
              <th>name</th>
              <th>description</th>
              <th>items</th>
              <th>done</th>
              <th>created</th>
              <th>by</th>
            </tr>
          </thead>
          <tbody>
            {list.map((q) => {
              const s = queues.data?.stats.get(q.id);
              return (
                <tr key={q.id}>
                  <td>
                    <Link to={`${project.base}/annotation_queues/${seg(q.id)}`}>{q.name}</Link>
                  </td>
                  <td>{q.description}</td>
                  <td className="num">{s?.total_items ?? ""}</td>
                  <td className="num">{s ? `${s.completed_items} of ${s.total_items}` : ""}</td>
                  <td>{formatTime(q.created_at)}</td>
                  <td>{q.created_by}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** The value at a display field's dotted path (`inputs.prompt`, `output.choices.0`) of a call. */
function fieldOf(call: Call, path: string): Json | undefined {
  let v: Json | undefined = call as unknown as Json;
  for (const part of path.split(".")) {
    if (v === null || v === undefined || typeof v !== "object") return undefined;
    v = Array.isArray(v) ? v[Number(part)] : v[part];
  }
  return v;
}

const scoreFields = (queue: AnnotationQueue): ScoreField[] =>
  queue.scorer_refs.length === 0
    ? [{ name: "score", scorerRef: null }]
    : queue.scorer_refs.map((ref) => ({ name: decodeURIComponent(parseRef(ref)?.name ?? ref), scorerRef: ref }));

export function AnnotationQueuePage({ project, queueId }: { project: ProjectRef; queueId: string }) {
  const queue = useLoad(
    (signal) => getJson<{ queue: AnnotationQueue }>(`/annotation_queues/${seg(queueId)}?project_id=${seg(project.projectId)}`, signal).then((r) => r.queue),
    [project.projectId, queueId],
  );
  const items = useLoad(
    (signal) => postJson<{ items: AnnotationQueueItem[] }>(`/annotation_queues/${seg(queueId)}/items/query`, { project_id: project.projectId, limit: MAX_ITEMS, include_position: true }, signal).then((r) => r.items),
    [project.projectId, queueId],
  );
  const [chosen, setChosen] = useState<string | null>(null);
  const list = items.data ?? [];
  const nextOpen = (after: number) => list.find((it, i) => i > after && !DONE.includes(it.annotation_state)) ?? list.find((it) => !DONE.includes(it.annotation_state));
  const current = list.find((it) => it.id === chosen) ?? nextOpen(-1) ?? null;
  const counts = { completed: list.filter((it) => it.annotation_state === "completed").length, skipped: list.filter((it) => it.annotation_state === "skipped").length };
  const done = counts.completed + counts.skipped;

  const move = useAction(async (item: AnnotationQueueItem, state: AnnotationState) => {
    await postJson(`/annotation_queues/${seg(queueId)}/items/${seg(item.id)}/progress`, { project_id: project.projectId, annotation_state: state });
    const index = list.findIndex((it) => it.id === item.id);
    setChosen(list.find((it, i) => i > index && !DONE.includes(it.annotation_state))?.id ?? null);
    items.reload();
  });

  return (
    <div className="page queue-page">
      <h2>
        {queue.data?.name ?? "Annotation queue"}{" "}
        <Link to={`${project.base}/annotation_queues`} className="small">
          all queues
        </Link>
      </h2>
      <ErrorBox error={queue.error ?? items.error} />
      {queue.data?.description && <p className="muted">{queue.data.description}</p>}
      {items.data && (
        <div className="queue-progress" aria-label="Progress">
          <progress max={Math.max(1, list.length)} value={done} />
          <span data-testid="queue-progress">
            {done} of {list.length} done ({counts.completed} completed, {counts.skipped} skipped)
          </span>
        </div>
      )}
      <Loading when={items.loading && !items.data} />
      <div className="queue-layout">
        <ol className="queue-items" aria-label="Items">
          {list.map((it) => (
            <li key={it.id} className={`${it.id === current?.id ? "selected" : ""} state-${it.annotation_state}`} data-item-id={it.id}>
              <button className="link" onClick={() => setChosen(it.id)}>
                {it.position_in_queue ?? ""}. {opName({ op_name: it.call_op_name, display_name: null })}
              </button>{" "}
              <span className={`chip state state-${it.annotation_state}`}>{it.annotation_state.replace("_", " ")}</span>
            </li>
          ))}
        </ol>
        <div className="queue-item">
          {!items.loading && list.length === 0 && !items.error && <p className="muted">This queue has no items.</p>}
          {list.length > 0 && done === list.length && !chosen && <p className="muted">Every item is done.</p>}
          {current && queue.data && <QueueItemView key={current.id} project={project} queue={queue.data} item={current} onMove={move.run} error={move.error} />}
        </div>
      </div>
    </div>
  );
}

function QueueItemView({ project, queue, item, onMove, error }: { project: ProjectRef; queue: AnnotationQueue; item: AnnotationQueueItem; onMove: (item: AnnotationQueueItem, state: AnnotationState) => Promise<boolean>; error: string | null }) {
  const call = useLoad(
    (signal) => postJson<{ call: Call | null }>("/call/read", { project_id: project.projectId, id: item.call_id }, signal).then((r) => r.call),
    [project.projectId, item.call_id],
  );
  const fields = item.display_fields.length > 0 ? item.display_fields : ["inputs", "output"];
  const finished = DONE.includes(item.annotation_state);
  return (
    <div className="call-detail" data-item-id={item.id}>
      <h3>
        Item {item.position_in_queue ?? ""}: <Link to={`${project.base}/calls/${seg(item.call_id)}`}>{opName({ op_name: item.call_op_name, display_name: null })}</Link>{" "}
        <span className="muted small">{formatTime(item.call_started_at)}</span>
      </h3>
      <ErrorBox error={call.error} />
      <Loading when={call.loading} />
      {call.data === null && <ErrorBox error={`The call ${item.call_id} is gone.`} />}
      {call.data &&
        fields.map((path) => (
          <Section key={path} title={path}>
            <div className="display-field" data-field={path}>
              <JsonView value={fieldOf(call.data!, path)} projectId={project.projectId} openDepth={2} />
            </div>
          </Section>
        ))}
      {call.data && <FeedbackPanel call={call.data} project={project} queueId={queue.id} scores={scoreFields(queue)} />}
      <ErrorBox error={error} />
      <div className="queue-actions">
        {finished ? (
          <span className="muted">This item is {item.annotation_state}.</span>
        ) : (
          <>
            <button className="primary" onClick={() => void onMove(item, "completed")}>
              Mark completed
            </button>
            <button onClick={() => void onMove(item, "skipped")}>Skip</button>
          </>
        )}
      </div>
    </div>
  );
}
