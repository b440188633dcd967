import { useState } from "react";
import { postLines } from "../api";
import type { ProjectRef } from "../project";
import { chatOfInputs, chatOfOutput, Conversation } from "../components/Chat";
import { ErrorBox, Loading, PageControls, StatusBadge } from "../components/common";
import { JsonView } from "../components/JsonView";
import { formatDuration, formatTime, latencyMs, opName, statusOf } from "../format";
import { useLoad, usePaged } from "../hooks";
import { Link, seg } from "../router";
import type { Call, Thread } from "../types";

const SORTABLE: [keyof Thread, string][] = [
  ["thread_id", "Thread"],
  ["turn_count", "Turns"],
  ["start_time", "Started"],
  ["last_updated", "Last update"],
  ["p50_turn_duration_ms", "p50 turn"],
  ["p99_turn_duration_ms", "p99 turn"],
];
const PAGE = 100;
const MAX_TURNS = 1000;

export function ThreadsPage({ project }: { project: ProjectRef }) {
  const [sort, setSort] = useState<{ field: keyof Thread; direction: "asc" | "desc" }>({ field: "last_updated", direction: "desc" });
  const threads = usePaged(
    async ({ offset, limit }, signal) => ({ rows: await postLines<Thread>("/threads/stream_query", { project_id: project.projectId, sort_by: [sort], limit, offset }, signal) }),
    [project.projectId, sort],
    { size: PAGE, more: true, key: (t) => t.thread_id },
  );
  const rows = threads.rows;
  const cell = (t: Thread, field: keyof Thread) => {
    if (field === "thread_id") return <Link to={`${project.base}/threads/${seg(t.thread_id)}`}>{t.thread_id}</Link>;
    if (field === "start_time" || field === "last_updated") return formatTime(t[field]);
    if (field === "p50_turn_duration_ms" || field === "p99_turn_duration_ms") return formatDuration(t[field]);
    return String(t[field] ?? "");
  };
  return (
    <div className="page">
      <h2>Threads</h2>
      <ErrorBox error={threads.error} />
      <table className="plain sortable-table" aria-label="Threads">
        <thead>
          <tr>
            {SORTABLE.map(([field, label]) => (
              <th key={field} className="sortable" onClick={() => setSort((s) => ({ field, direction: s.field === field && s.direction === "desc" ? "asc" : "desc" }))}>
                {label}
                {sort.field === field ? (sort.direction === "desc" ? " ▼" : " ▲") : ""}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => (
            <tr key={t.thread_id}>
              {SORTABLE.map(([field]) => (
                <td key={field}>{cell(t, field)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      <Loading when={threads.loading} />
      {!threads.loading && rows.length === 0 && !threads.error && <p className="muted">No threads: calls with a thread_id and a turn_id appear here.</p>}
      <PageControls paged={threads} />
    </div>
  );
}

export function ThreadPage({ project, threadId }: { project: ProjectRef; threadId: string }) {
  const turns = useLoad(
    (signal) =>
      postLines<Call>(
        "/calls/stream_query",
        {
          project_id: project.projectId,
          filter: { thread_ids: [threadId] },
          query: { $expr: { $eq: [{ $getField: "id" }, { $getField: "turn_id" }] } },
          sort_by: [{ field: "started_at", direction: "asc" }],
          limit: MAX_TURNS,
        },
        signal,
      ),
    [project.projectId, threadId],
  );
  const list = turns.data ?? [];
  return (
    <div className="page thread-page">
      <h2>
        Thread <span className="mono">{threadId}</span>
      </h2>
      <ErrorBox error={turns.error} />
      <Loading when={turns.loading} />
      {!turns.loading && list.length === 0 && !turns.error && <p className="muted">No turns in this thread.</p>}
      {list.length === MAX_TURNS && <p className="muted">The first {MAX_TURNS} turns are shown.</p>}
      <ol className="turns" aria-label="Turns">
        {list.map((turn, i) => (
          <li key={turn.id} className="turn" data-turn-id={turn.id}>
            <div className="turn-head">
              <span className="muted">turn {i + 1}</span> <Link to={`${project.base}/calls/${seg(turn.id)}`}>{opName(turn)}</Link> <StatusBadge status={statusOf(turn)} />{" "}
              <span className="muted small">
                {formatTime(turn.started_at)} · {formatDuration(latencyMs(turn)) || "running"}
              </span>
            </div>
            <TurnBody call={turn} projectId={project.projectId} />
          </li>
        ))}
      </ol>
    </div>
  );
}

function TurnBody({ call, projectId }: { call: Call; projectId: string }) {
  const chatIn = chatOfInputs(call.inputs);
  const chatOut = chatOfOutput(call.output);
  return (
    <div className="turn-body">
      <div className="turn-in">{chatIn ? <Conversation messages={chatIn.slice(-1)} projectId={projectId} /> : <JsonView value={call.inputs} projectId={projectId} openDepth={1} />}</div>
      <div className="turn-out">
        {call.exception ? <pre className="exception">{call.exception}</pre> : chatOut ? <Conversation messages={chatOut} projectId={projectId} /> : <JsonView value={call.output} projectId={projectId} openDepth={1} />}
      </div>
    </div>
  );
}
