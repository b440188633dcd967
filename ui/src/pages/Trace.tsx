import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useMemo, useRef, useState } from "react";
import { postJson, postLines } from "../api";
import type { ProjectRef } from "../project";
import { chatOfInputs, chatOfOutput, Conversation } from "../components/Chat";
import { ErrorBox, Loading, Section, StatusBadge } from "../components/common";
import { FeedbackPanel } from "../components/Feedback";
import { JsonView } from "../components/JsonView";
import { MonitorScores } from "../components/MonitorScores";
import { formatCost, formatDuration, formatNumber, formatTime, latencyMs, opName, statusOf } from "../format";
import { useLoad } from "../hooks";
import { Link, navigate, seg } from "../router";
import type { Call, CallLogRecords, CostFigures, Json } from "../types";

const ROW_HEIGHT = 26;
const TREE_COLUMNS = ["id", "parent_id", "op_name", "display_name", "started_at", "ended_at", "exception"];
const MAX_TRACE_CALLS = 100_000;

interface TreeNode {
  call: Call;
  depth: number;
  childCount: number;
  start: number;
  end: number | null;
}

/** The trace's calls as a tree: children by parent, in start order; calls whose parent is not in the trace are roots. */
function buildTree(calls: Call[]): { roots: Call[]; children: Map<string, Call[]> } {
  const ids = new Set(calls.map((c) => c.id));
  const children = new Map<string, Call[]>();
  const roots: Call[] = [];
  for (const c of calls) {
    if (c.parent_id && ids.has(c.parent_id) && c.parent_id !== c.id) {
      const list = children.get(c.parent_id);
      if (list) list.push(c);
      else children.set(c.parent_id, [c]);
    } else roots.push(c);
  }
  return { roots, children };
}

/** Depth-first rows of the expanded part of the tree (iterative: traces can be deep). */
function visibleRows(tree: { roots: Call[]; children: Map<string, Call[]> }, collapsed: ReadonlySet<string>): TreeNode[] {
  const out: TreeNode[] = [];
  const stack: { call: Call; depth: number }[] = tree.roots.map((call) => ({ call, depth: 0 })).reverse();
  while (stack.length > 0) {
    const { call, depth } = stack.pop()!;
    const kids = tree.children.get(call.id) ?? [];
    out.push({ call, depth, childCount: kids.length, start: Date.parse(call.started_at), end: call.ended_at ? Date.parse(call.ended_at) : null });
    if (!collapsed.has(call.id)) for (let i = kids.length - 1; i >= 0; i--) stack.push({ call: kids[i]!, depth: depth + 1 });
  }
  return out;
}

export function TracePage({ project, callId }: { project: ProjectRef; callId: string }) {
  const selected = useLoad(
    (signal) => postJson<{ call: Call | null }>("/call/read", { project_id: project.projectId, id: callId, include_costs: true }, signal).then((r) => r.call),
    [project.projectId, callId],
  );
  const traceId = selected.data?.trace_id ?? null;
  const trace = useLoad(
    async (signal) =>
      traceId === null
        ? null
        : postLines<Call>(
            "/calls/stream_query",
            { project_id: project.projectId, filter: { trace_ids: [traceId] }, sort_by: [{ field: "started_at", direction: "asc" }], columns: TREE_COLUMNS, limit: MAX_TRACE_CALLS },
            signal,
          ),
    [project.projectId, traceId],
  );
  return (
    <div className="trace-page">
      <div className="trace-left">
        <ErrorBox error={trace.error} />
        {trace.data ? <TraceTree calls={trace.data} selectedId={callId} project={project} /> : <Loading when={selected.loading || trace.loading} />}
      </div>
      <div className="trace-right">
        <ErrorBox error={selected.error} />
        <Loading when={selected.loading} />
        {selected.data === null && !selected.loading && <ErrorBox error={`No call ${callId} in ${project.projectId}.`} />}
        {selected.data && <CallDetail call={selected.data} project={project} />}
      </div>
    </div>
  );
}

function TraceTree({ calls, selectedId, project }: { calls: Call[]; selectedId: string; project: ProjectRef }) {
  const tree = useMemo(() => buildTree(calls), [calls]);
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const rows = useMemo(() => visibleRows(tree, collapsed), [tree, collapsed]);
  const bounds = useMemo(() => {
    let min = Infinity;
    let max = -Infinity;
    const now = Date.now();
    for (const c of calls) {
      const s = Date.parse(c.started_at);
      const e = c.ended_at ? Date.parse(c.ended_at) : now;
      if (s < min) min = s;
      if (e > max) max = e;
    }
    return { min, span: Math.max(1, max - min) };
  }, [calls]);
  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_HEIGHT, overscan: 20 });
  const scrolledTo = useRef<string | null>(null);
  useEffect(() => {
    if (scrolledTo.current === selectedId) return;
    const index = rows.findIndex((r) => r.call.id === selectedId);
    if (index >= 0) {
      virtual.scrollToIndex(index, { align: "auto" });
      scrolledTo.current = selectedId;
    }
  }, [rows, selectedId, virtual]);
  const toggle = (id: string) =>
    setCollapsed((old) => {
      const next = new Set(old);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  return (
    <div className="tree" aria-label="Trace">
      <div className="tree-head">
        <span>
          {calls.length.toLocaleString("en-US")} calls · {formatDuration(bounds.span)}
        </span>
        <span className="tree-actions">
          <button className="link" onClick={() => setCollapsed(new Set())}>
            expand all
          </button>{" "}
          <button className="link" onClick={() => setCollapsed(new Set(calls.filter((c) => tree.children.has(c.id)).map((c) => c.id)))}>
            collapse all
          </button>
        </span>
      </div>
      <div className="tree-body" ref={scroller} data-testid="trace-scroller">
        <div style={{ height: virtual.getTotalSize(), position: "relative" }}>
          {virtual.getVirtualItems().map((item) => {
            const row = rows[item.index]!;
            const status = statusOf(row.call);
            const left = ((row.start - bounds.min) / bounds.span) * 100;
            const width = Math.max(0.2, (((row.end ?? Date.now()) - row.start) / bounds.span) * 100);
            return (
              <div
                key={row.call.id}
                className={`tree-row${row.call.id === selectedId ? " selected" : ""}`}
                data-call-id={row.call.id}
                style={{ transform: `translateY(${item.start}px)`, height: ROW_HEIGHT }}
                onClick={() => navigate(`${project.base}/calls/${seg(row.call.id)}`, { replace: true })}
              >
                <div className="tree-name" style={{ paddingLeft: 6 + row.depth * 14 }}>
                  {row.childCount > 0 ? (
                    <button
                      className="tree-toggle"
                      aria-label={collapsed.has(row.call.id) ? "expand" : "collapse"}
                      onClick={(e) => {
                        e.stopPropagation();
                        toggle(row.call.id);
                      }}
                    >
                      {collapsed.has(row.call.id) ? "▸" : "▾"}
                    </button>
                  ) : (
                    <span className="tree-toggle" />
                  )}
                  <span className={`dot dot-${status}`} title={status} />
                  <span className="tree-label">{opName(row.call)}</span>
                  {row.childCount > 0 && collapsed.has(row.call.id) && <span className="muted small"> +{row.childCount}</span>}
                </div>
                <div className="tree-bar-cell">
                  <div className={`tree-bar bar-${status}`} style={{ left: `${left}%`, width: `${Math.min(width, 100 - left)}%` }} title={formatDuration(row.end === null ? null : row.end - row.start)} />
                </div>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}

function CallDetail({ call, project }: { call: Call; project: ProjectRef }) {
  const [raw, setRaw] = useState(false);
  const chatIn = chatOfInputs(call.inputs);
  const chatOut = chatOfOutput(call.output);
  const status = statusOf(call);
  return (
    <div className="call-detail">
      <h2>
        {opName(call)} <StatusBadge status={status} />
      </h2>
      <div className="facts small">
        <span>id {call.id}</span>
        <span>started {formatTime(call.started_at)}</span>
        {call.ended_at && <span>ended {formatTime(call.ended_at)}</span>}
        <span>latency {formatDuration(latencyMs(call)) || "running"}</span>
        {call.wb_user_id && <span>user {call.wb_user_id}</span>}
        {call.thread_id && (
          <span>
            thread <Link to={`${project.base}/threads/${seg(call.thread_id)}`}>{call.thread_id}</Link>
          </span>
        )}
        {call.op_name.startsWith("weave:///") && <span className="muted">{call.op_name}</span>}
      </div>
      {call.exception && (
        <Section title="Exception">
          <pre className="exception">{call.exception}</pre>
        </Section>
      )}
      {(chatIn || chatOut) && (
        <label className="small raw-toggle">
          <input type="checkbox" checked={raw} onChange={(e) => setRaw(e.target.checked)} /> show messages as JSON
        </label>
      )}
      <Section title="Inputs">{chatIn && !raw ? <Conversation messages={chatIn} projectId={project.projectId} /> : <JsonView value={call.inputs} projectId={project.projectId} />}</Section>
      <Section title="Output">{chatOut && !raw ? <Conversation messages={chatOut} projectId={project.projectId} /> : <JsonView value={call.output} projectId={project.projectId} />}</Section>
      <UsageTable summary={call.summary} />
      {call.attributes?.otel !== undefined && <LogRecords call={call} project={project} />}
      <MonitorScores callId={call.id} project={project} />
      <FeedbackPanel call={call} project={project} monitorScoresApart />
      <Section title="Attributes">
        <JsonView value={call.attributes} projectId={project.projectId} openDepth={1} />
      </Section>
      <Section title="Summary">
        <JsonView value={call.summary as Json | undefined} projectId={project.projectId} openDepth={1} />
      </Section>
    </div>
  );
}

/** The OTLP log records of a span's call (its events sent to /otel/v1/logs), oldest first; nothing when it has none. */
function LogRecords({ call, project }: { call: Call; project: ProjectRef }) {
  const { data, error } = useLoad((signal) => postJson<CallLogRecords>("/call/log_records", { project_id: project.projectId, call_id: call.id }, signal), [project.projectId, call.id]);
  if (error) return <ErrorBox error={error} />;
  if (!data || data.records.length === 0) return null;
  return (
    <Section title={`Log records (${data.records.length})`}>
      <table className="plain" aria-label="Log records">
        <thead>
          <tr>
            <th>time</th>
            <th>severity</th>
            <th>event</th>
            <th>body</th>
          </tr>
        </thead>
        <tbody>
          {data.records.map((r, i) => (
            <tr key={i}>
              <td className="small">{formatTime(r.time)}</td>
              <td className="small">{r.severity_text || (r.severity_number > 0 ? String(r.severity_number) : "")}</td>
              <td>{r.event_name}</td>
              <td>
                <JsonView value={(r.body ?? null) as Json} projectId={project.projectId} openDepth={1} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}

function UsageTable({ summary }: { summary: Call["summary"] }) {
  const usage = (summary?.usage ?? {}) as Record<string, Record<string, number | null>>;
  const costs: Record<string, CostFigures> = summary?.weave?.costs ?? {};
  const models = [...new Set([...Object.keys(usage), ...Object.keys(costs)])];
  if (models.length === 0) return null;
  return (
    <Section title="Usage and cost per model">
      <table className="plain">
        <thead>
          <tr>
            <th>model</th>
            <th>requests</th>
            <th>prompt tokens</th>
            <th>completion tokens</th>
            <th>total tokens</th>
            <th>cost</th>
          </tr>
        </thead>
        <tbody>
          {models.map((m) => {
            const u = usage[m] ?? {};
            const c = costs[m];
            const prompt = u.prompt_tokens ?? u.input_tokens ?? null;
            const completion = u.completion_tokens ?? u.output_tokens ?? null;
            return (
              <tr key={m}>
                <td>{m}</td>
                <td>{formatNumber(u.requests ?? null)}</td>
                <td>{formatNumber(prompt)}</td>
                <td>{formatNumber(completion)}</td>
                <td>{formatNumber(u.total_tokens ?? (prompt ?? 0) + (completion ?? 0))}</td>
                <td>{c ? formatCost((c.prompt_tokens_total_cost ?? 0) + (c.completion_tokens_total_cost ?? 0)) : "no price"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </Section>
  );
}
