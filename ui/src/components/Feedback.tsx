import { useState } from "react";
import { postJson } from "../api";
import type { ProjectRef } from "../project";
import { formatTime } from "../format";
import { useAction, useLoad } from "../hooks";
import { isMonitorScore } from "../monitors";
import type { Call, Feedback } from "../types";
import { ErrorBox, Section } from "./common";
import { JsonView } from "./JsonView";

const REACTIONS = ["👍", "👎", "🎉", "❓"];

/** A score an annotator gives: feedback `wandb.annotation.<name>` naming its scorer when the queue has one. */
export interface ScoreField {
  readonly name: string;
  readonly scorerRef: string | null;
}

/**
 * The call's feedback (`/feedback/query` on its ref) and a reaction or a note added from here;
 * from an annotation queue (`queueId`) also its scores, and every feedback names the queue.
 */
/**
 * `monitorScoresApart`: the page shows the monitors' scores in a section of their own
 * (MonitorScores), so they are left out here.
 */
export function FeedbackPanel({ call, project, queueId, scores = [], monitorScoresApart = false }: { call: Call; project: ProjectRef; queueId?: string; scores?: readonly ScoreField[]; monitorScoresApart?: boolean }) {
  const ref = `weave:///${project.projectId}/call/${call.id}`;
  const list = useLoad(
    (signal) =>
      postJson<{ result: Feedback[] }>(
        "/feedback/query",
        { project_id: project.projectId, query: { $expr: { $eq: [{ $getField: "weave_ref" }, { $literal: ref }] } }, sort_by: [{ field: "created_at", direction: "asc" }] },
        signal,
      ).then((r) => (monitorScoresApart ? r.result.filter((f) => !isMonitorScore(f)) : r.result)),
    [ref, monitorScoresApart],
  );
  const [note, setNote] = useState("");
  const { run: add, error } = useAction(async (feedback_type: string, payload: Record<string, string | number>, annotation_ref: string | null = null) => {
    await postJson("/feedback/create", { project_id: project.projectId, weave_ref: ref, feedback_type, payload, annotation_ref, queue_id: queueId ?? null });
    list.reload();
  });
  return (
    <Section title="Feedback">
      <ErrorBox error={list.error ?? error} />
      <ul className="feedback">
        {(list.data ?? []).map((f) => (
          <li key={f.id}>
            <FeedbackItem f={f} projectId={project.projectId} />
            <span className="muted small">
              {" "}
              — {f.wb_user_id}, {formatTime(f.created_at)}
            </span>
          </li>
        ))}
        {list.data?.length === 0 && <li className="muted">none yet</li>}
      </ul>
      <div className="feedback-add">
        {REACTIONS.map((emoji) => (
          <button key={emoji} className="reaction" title={`react ${emoji}`} onClick={() => void add("wandb.reaction.1", { emoji })}>
            {emoji}
          </button>
        ))}
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (note.trim()) void add("wandb.note.1", { note: note.trim() }).then((ok) => ok && setNote(""));
          }}
        >
          <input placeholder="Add a note…" aria-label="Note" value={note} onChange={(e) => setNote(e.target.value)} />
          <button type="submit">Add note</button>
        </form>
      </div>
      {scores.map((field) => (
        <ScoreInput key={field.name} field={field} onSave={(value) => add(`wandb.annotation.${field.name}`, { value }, field.scorerRef)} />
      ))}
    </Section>
  );
}

function ScoreInput({ field, onSave }: { field: ScoreField; onSave: (value: number) => Promise<boolean> }) {
  const [text, setText] = useState("");
  const value = Number(text);
  const valid = text.trim() !== "" && Number.isFinite(value);
  return (
    <form
      className="feedback-add score-add"
      onSubmit={(e) => {
        e.preventDefault();
        if (valid) void onSave(value).then((ok) => ok && setText(""));
      }}
    >
      <label>
        {field.name} <input type="number" step="any" aria-label={`Score ${field.name}`} value={text} onChange={(e) => setText(e.target.value)} />
      </label>
      <button type="submit" disabled={!valid}>
        Save score
      </button>
    </form>
  );
}

function FeedbackItem({ f, projectId }: { f: Feedback; projectId: string }) {
  if (f.feedback_type === "wandb.reaction.1" && typeof f.payload.emoji === "string") return <span className="reaction-shown">{f.payload.emoji}</span>;
  if (f.feedback_type === "wandb.note.1" && typeof f.payload.note === "string") return <span>📝 {f.payload.note}</span>;
  if (f.feedback_type.startsWith("wandb.annotation.") && typeof f.payload.value === "number") return <span>🏷 {f.feedback_type.slice("wandb.annotation.".length)}: {f.payload.value}</span>;
  return (
    <span>
      <span className="muted">{f.feedback_type}</span> <JsonView value={f.payload} projectId={projectId} openDepth={0} />
    </span>
  );
}
