import type { ReactNode } from "react";
import { postJson } from "../api";
import { formatTime } from "../format";
import { useLoad } from "../hooks";
import { isMonitorScore, monitorOfTrigger, scorerOfType } from "../monitors";
import type { ProjectRef } from "../project";
import { Link, seg } from "../router";
import type { MonitorScore } from "../types";
import { ErrorBox, Section } from "./common";
import { JsonView } from "./JsonView";

const SCORE_FIELDS = ["id", "weave_ref", "feedback_type", "payload", "created_at", "runnable_ref", "trigger_ref"];

/**
 * The scores monitors gave a call: its feedback whose `trigger_ref` names a monitor version,
 * each with the monitor's name, the scorer and the judge's output. Nothing when it has none.
 */
export function MonitorScores({ callId, project }: { callId: string; project: ProjectRef }) {
  const ref = `weave:///${project.projectId}/call/${callId}`;
  const scores = useLoad(
    (signal) =>
      postJson<{ result: MonitorScore[] }>(
        "/feedback/query",
        { project_id: project.projectId, fields: SCORE_FIELDS, query: { $expr: { $eq: [{ $getField: "weave_ref" }, { $literal: ref }] } }, sort_by: [{ field: "created_at", direction: "asc" }] },
        signal,
      ).then((r) => r.result.filter(isMonitorScore)),
    [ref],
  );
  if (scores.error) return <ErrorBox error={scores.error} />;
  if (!scores.data || scores.data.length === 0) return null;
  return (
    <Section title="Monitor scores">
      <ScoresTable
        scores={scores.data}
        project={project}
        className="monitor-scores"
        rowClassName="monitor-score"
        first={{
          title: "monitor",
          cell: (s) => <Link to={`${project.base}/monitors?monitor=${seg(monitorOfTrigger(s.trigger_ref)!)}`}>{monitorOfTrigger(s.trigger_ref)}</Link>,
        }}
      />
    </Section>
  );
}

/** A table of scores: a first column of the caller's (the monitor, the call), then the scorer, the judge's output and when. */
export function ScoresTable({ scores, project, className, rowClassName, first }: {
  scores: readonly MonitorScore[];
  project: ProjectRef;
  className: string;
  rowClassName?: string;
  first: { title: string; cell: (score: MonitorScore) => ReactNode };
}) {
  return (
    <table className={`plain ${className}`}>
      <thead>
        <tr>
          <th>{first.title}</th>
          <th>scorer</th>
          <th>score</th>
          <th>scored</th>
        </tr>
      </thead>
      <tbody>
        {scores.map((s) => (
          <tr key={s.id} className={rowClassName}>
            <td>{first.cell(s)}</td>
            <td>{scorerOfType(s.feedback_type)}</td>
            <td>
              <JsonView value={s.payload.output} projectId={project.projectId} openDepth={1} />
            </td>
            <td className="muted small">{formatTime(s.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
