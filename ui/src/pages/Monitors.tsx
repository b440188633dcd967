import { useMemo, useState, type FormEvent } from "react";
import { postJson } from "../api";
import { PALETTE, TimeChart, type Series } from "../components/Chart";
import { ErrorBox, Loading, Section } from "../components/common";
import { parseRef } from "../components/JsonView";
import { ScoresTable } from "../components/MonitorScores";
import { formatTime } from "../format";
import { useAction, useLoad } from "../hooks";
import { JUDGE_CLASS, MONITOR_CLASS, monitorObjectId, monitorValue, objectRef, opOfRef, scoreNumbers, scorerOfType } from "../monitors";
import type { ProjectRef } from "../project";
import { Link, navigate, seg } from "../router";
import type { Json, JsonObject, MonitorScore, MonitorStatus, ObjVersion } from "../types";

/** The newest scores listed under a monitor's chart. */
const RECENT_SCORES = 20;
/** The most scores read for the chart: /feedback/query's largest page. */
const MAX_SCORES = 10_000;
/** Bucket widths (s) for the scores chart: the narrowest giving at most MAX_BUCKETS over the scores' span. */
const BUCKETS_S = [60, 300, 900, 3600, 6 * 3600, 86_400, 7 * 86_400];
const MAX_BUCKETS = 60;

const latestOfClass = (project: ProjectRef, leafClass: string, metadataOnly: boolean, signal: AbortSignal) =>
  postJson<{ objs: ObjVersion[] }>(
    "/objs/query",
    { project_id: project.projectId, filter: { leaf_object_classes: [leafClass], latest_only: true }, sort_by: [{ field: "created_at", direction: "desc" }], metadata_only: metadataOnly, limit: 1000 },
    signal,
  ).then((r) => r.objs);

const valueOf = (o: ObjVersion): JsonObject => (o.val !== null && typeof o.val === "object" && !Array.isArray(o.val) ? o.val : {});
const strings = (v: Json | undefined): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : []);
const nameOfRef = (ref: string) => parseRef(ref)?.name ?? ref;

/**
 * A project's monitors (latest versions of its Monitor objects) with their status, made,
 * switched on and off here by publishing versions as the Weave SDK does (`/obj/create`), and
 * the chosen monitor's scores over all its versions.
 */
export function MonitorsPage({ project, selected }: { project: ProjectRef; selected: string | null }) {
  const monitors = useLoad((signal) => latestOfClass(project, MONITOR_CLASS, false, signal), [project.projectId]);
  const list = monitors.data ?? [];
  const shown = selected ?? list[0]?.object_id ?? null;
  return (
    <div className="page monitors-page">
      <h2>Monitors of {project.projectId}</h2>
      <Section title="Monitors">
        <ErrorBox error={monitors.error} />
        <Loading when={monitors.loading && !monitors.data} />
        {monitors.data?.length === 0 && <p className="muted">No monitors yet.</p>}
        {list.length > 0 && (
          <table className="alerts monitors">
            <thead>
              <tr>
                <th>Name</th>
                <th>Ops</th>
                <th>Sampling</th>
                <th>Scorers</th>
                <th>Active</th>
                <th>Scored (this version)</th>
                <th>Last scored</th>
                <th>Problems</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((o) => (
                <MonitorRow key={`${o.object_id}:${o.digest}`} project={project} monitor={o} onChanged={monitors.reload} />
              ))}
            </tbody>
          </table>
        )}
        <button className="link" onClick={monitors.reload}>
          Refresh
        </button>
      </Section>
      {shown !== null && <MonitorHistory key={shown} project={project} objectId={shown} />}
      <Section title="New monitor">
        <NewMonitorForm project={project} onCreated={monitors.reload} />
      </Section>
    </div>
  );
}

function MonitorRow({ project, monitor, onChanged }: { project: ProjectRef; monitor: ObjVersion; onChanged: () => void }) {
  const val = valueOf(monitor);
  const ref = objectRef(project.projectId, monitor.object_id, monitor.digest);
  const status = useLoad((signal) => postJson<MonitorStatus>("/monitors/status", { project_id: project.projectId, monitor_ref: ref }, signal), [ref]);
  const active = val.active === true;
  const filter = val.call_filter !== null && typeof val.call_filter === "object" && !Array.isArray(val.call_filter) ? val.call_filter : {};
  const ops = strings(filter.op_names).map(opOfRef);
  // A new version with `active` flipped, the rest of the value as it is (what the SDK's `activate()`/`deactivate()` publish).
  const toggle = useAction(async () => {
    await postJson("/obj/create", { obj: { project_id: project.projectId, object_id: monitor.object_id, val: { ...val, active: !active } } });
    onChanged();
  });
  const problems = [...(status.data?.unsupported_scorers ?? []).map((u) => `${nameOfRef(u.ref)}: ${u.reason}`), ...(status.data?.filter_error ? [`filter: ${status.data.filter_error}`] : [])];
  return (
    <tr className="monitor-row">
      <td>
        <Link to={`${project.base}/monitors?monitor=${seg(monitor.object_id)}`}>{typeof val.name === "string" ? val.name : monitor.object_id}</Link>
        <div className="muted small">v{monitor.version_index}</div>
      </td>
      <td>{ops.length > 0 ? ops.join(", ") : <span className="muted">every op</span>}</td>
      <td>{typeof val.sampling_rate === "number" ? val.sampling_rate : 1}</td>
      <td>{strings(val.scorers).map(nameOfRef).join(", ")}</td>
      <td>
        <span className={`badge ${active ? "alert-ok" : ""}`}>{active ? "active" : "inactive"}</span>
      </td>
      <td>{status.data?.scored ?? ""}</td>
      <td>{formatTime(status.data?.last_scored_at)}</td>
      <td className="alert-history">
        <ErrorBox error={status.error ?? toggle.error} />
        {problems.join("; ")}
      </td>
      <td>
        <button disabled={toggle.busy} onClick={() => void toggle.run()}>
          {active ? "Deactivate" : "Activate"} {monitor.object_id}
        </button>
      </td>
    </tr>
  );
}

/** The newest scores (MAX_SCORES) of every version of a monitor (feedback whose trigger_ref is one of them), oldest first. */
async function scoresOfMonitor(project: ProjectRef, objectId: string, signal: AbortSignal): Promise<{ versions: number; scores: MonitorScore[] }> {
  const versions = (
    await postJson<{ objs: ObjVersion[] }>("/objs/query", { project_id: project.projectId, filter: { object_ids: [objectId] }, metadata_only: true }, signal)
  ).objs;
  if (versions.length === 0) return { versions: 0, scores: [] };
  const refs = versions.map((v) => ({ $literal: objectRef(project.projectId, objectId, v.digest) }));
  const { result } = await postJson<{ result: MonitorScore[] }>(
    "/feedback/query",
    {
      project_id: project.projectId,
      fields: ["id", "weave_ref", "feedback_type", "payload", "created_at", "runnable_ref", "trigger_ref"],
      query: { $expr: { $in: [{ $getField: "trigger_ref" }, refs] } },
      sort_by: [{ field: "created_at", direction: "desc" }],
      limit: MAX_SCORES,
    },
    signal,
  );
  return { versions: versions.length, scores: result.reverse() };
}

/** Per bucket of time, the mean of each number of the scores' outputs (scoreNumbers), one series per scorer and number. */
function scoreSeries(scores: readonly MonitorScore[]): { times: number[]; series: Series[] } {
  if (scores.length === 0) return { times: [], series: [] };
  const at = scores.map((s) => Date.parse(s.created_at) / 1000);
  // The axis runs from the first score to now (a monitor gone quiet shows as such), a bucket before it at least.
  const first = Math.min(...at);
  const last = Math.max(Date.now() / 1000, ...at);
  const width = BUCKETS_S.find((w) => (last - first) / w < MAX_BUCKETS) ?? BUCKETS_S[BUCKETS_S.length - 1]!;
  const start = (Math.floor(first / width) - 1) * width;
  const count = Math.floor((last - start) / width) + 1;
  const sums = new Map<string, { sum: number[]; n: number[] }>();
  scores.forEach((s, i) => {
    const bucket = Math.floor((at[i]! - start) / width);
    for (const [key, value] of scoreNumbers(s.payload.output)) {
      const label = `${scorerOfType(s.feedback_type)}.${key}`;
      let acc = sums.get(label);
      if (!acc) sums.set(label, (acc = { sum: new Array<number>(count).fill(0), n: new Array<number>(count).fill(0) }));
      acc.sum[bucket]! += value;
      acc.n[bucket]! += 1;
    }
  });
  const times = Array.from({ length: count }, (_, i) => start + i * width);
  const series = [...sums.entries()].map(([label, acc], i) => ({ label, color: PALETTE[i % PALETTE.length]!, values: acc.sum.map((sum, b) => (acc.n[b] ? sum / acc.n[b]! : null)) }));
  return { times, series };
}

function MonitorHistory({ project, objectId }: { project: ProjectRef; objectId: string }) {
  const history = useLoad((signal) => scoresOfMonitor(project, objectId, signal), [project.projectId, objectId]);
  const scores = history.data?.scores;
  const chart = useMemo(() => scoreSeries(scores ?? []), [scores]);
  const recent = (scores ?? []).slice(-RECENT_SCORES).reverse();
  return (
    <Section title={`Scores of ${objectId}`}>
      <ErrorBox error={history.error} />
      <Loading when={history.loading && !history.data} />
      {history.data && (
        <p className="muted monitor-score-count">
          {history.data.scores.length} scores over {history.data.versions} versions{history.data.scores.length === MAX_SCORES ? ` (the newest ${MAX_SCORES})` : ""}.{" "}
          <button className="link" onClick={history.reload}>
            Refresh
          </button>
        </p>
      )}
      {chart.series.length > 0 && <TimeChart title="Mean score per bucket" times={chart.times} series={chart.series} />}
      {recent.length > 0 && (
        <ScoresTable
          scores={recent}
          project={project}
          className="monitor-recent"
          first={{
            title: "call",
            cell: (s) => {
              const call = parseRef(s.weave_ref)?.name ?? s.weave_ref;
              return <Link to={`${project.base}/calls/${seg(call)}`}>{call}</Link>;
            },
          }}
        />
      )}
    </Section>
  );
}

function NewMonitorForm({ project, onCreated }: { project: ProjectRef; onCreated: () => void }) {
  const judges = useLoad((signal) => latestOfClass(project, JUDGE_CLASS, true, signal), [project.projectId]);
  const [form, setForm] = useState({ name: "", description: "", ops: "", rate: "1" });
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set());
  const set = (field: keyof typeof form) => (e: { target: { value: string } }) => setForm({ ...form, [field]: e.target.value });
  const create = useAction(async () => {
    if (chosen.size === 0) throw new Error("Choose at least one scorer.");
    const objectId = monitorObjectId(form.name);
    const val = monitorValue(project.projectId, {
      name: form.name.trim(),
      description: form.description,
      samplingRate: Number(form.rate),
      scorerRefs: [...chosen],
      ops: form.ops.split(",").map((s) => s.trim()).filter(Boolean),
    });
    await postJson("/obj/create", { obj: { project_id: project.projectId, object_id: objectId, val } });
    setForm({ name: "", description: "", ops: "", rate: "1" });
    setChosen(new Set());
    onCreated();
    navigate(`${project.base}/monitors?monitor=${seg(objectId)}`);
  });
  const toggle = (ref: string) =>
    setChosen((old) => {
      const next = new Set(old);
      if (next.has(ref)) next.delete(ref);
      else next.add(ref);
      return next;
    });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run();
  };
  return (
    <form className="monitor-form" onSubmit={submit}>
      <label>
        Name <input value={form.name} onChange={set("name")} required />
      </label>
      <label>
        Description <input value={form.description} onChange={set("description")} />
      </label>
      <label>
        Ops (comma-separated; empty: every op) <input value={form.ops} onChange={set("ops")} />
      </label>
      <label>
        Sampling rate (0–1) <input type="number" min={0} max={1} step="any" value={form.rate} onChange={set("rate")} required />
      </label>
      <span>Scorers</span>
      <span className="monitor-scorers">
        <ErrorBox error={judges.error} />
        {judges.data?.length === 0 && <span className="muted">No {JUDGE_CLASS} objects in this project: publish a judge scorer first.</span>}
        {(judges.data ?? []).map((j) => {
          const ref = objectRef(project.projectId, j.object_id, j.digest);
          return (
            <label key={ref} className="monitor-scorer">
              <input type="checkbox" checked={chosen.has(ref)} onChange={() => toggle(ref)} /> {j.object_id}
            </label>
          );
        })}
      </span>
      <button type="submit" disabled={create.busy}>
        Create monitor
      </button>
      <ErrorBox error={create.error} />
    </form>
  );
}
