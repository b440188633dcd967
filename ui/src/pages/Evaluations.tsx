import { useState } from "react";
import { postJson, postLines } from "../api";
import type { ProjectRef } from "../project";
import { ErrorBox, Loading, PageControls, StatusBadge } from "../components/common";
import { JsonView, parseRef } from "../components/JsonView";
import { formatDuration, formatTime, latencyMs, statusOf } from "../format";
import { useLoad, usePaged } from "../hooks";
import { Link, navigate, seg } from "../router";
import type { Call, EvalResults, EvalTrial, Json, ScorerStats } from "../types";

/**
 * Evaluation runs (the `Evaluation.evaluate` trace roots, as the Weave SDKs and the /v2/ routes
 * write them) with the scores their output summarizes, and the row-by-row comparison of two or
 * more of them through `/v2/{e}/{p}/eval_results/query`.
 */
const MAX_RUNS = 500;
const MAX_SUMMARY_COLUMNS = 12;
const COMPARE_PAGE = 50;

const nameOfRef = (ref: Json | undefined): string => {
  if (typeof ref !== "string") return "";
  const r = parseRef(ref);
  return r ? decodeURIComponent(r.name) : ref;
};

type Leaf = [path: string, value: number | boolean];

/** The numeric and boolean leaves of a run's output summary, as dotted paths. */
function summaryLeaves(value: Json | undefined, prefix = "", depth = 0): Leaf[] {
  if (typeof value === "number" || typeof value === "boolean") return prefix ? [[prefix, value]] : [];
  if (value === null || typeof value !== "object" || Array.isArray(value) || depth > 3) return [];
  return Object.entries(value).flatMap(([k, v]) => summaryLeaves(v, prefix ? `${prefix}.${k}` : k, depth + 1));
}

const formatScore = (v: number | boolean | null | undefined): string => {
  if (v === null || v === undefined) return "";
  if (typeof v === "boolean") return String(v);
  return Number.isInteger(v) ? String(v) : v.toFixed(3).replace(/0+$/, "");
};

export function EvaluationsPage({ project }: { project: ProjectRef }) {
  const runs = useLoad(
    (signal) =>
      postLines<Call>(
        "/calls/stream_query",
        {
          project_id: project.projectId,
          filter: { trace_roots_only: true },
          query: { $expr: { $contains: { input: { $getField: "op_name" }, substr: { $literal: "Evaluation.evaluate" } } } },
          sort_by: [{ field: "started_at", direction: "desc" }],
          limit: MAX_RUNS,
        },
        signal,
      ),
    [project.projectId],
  );
  const [selected, setSelected] = useState<string[]>([]);
  const list = runs.data ?? [];
  const columns = [...new Set(list.flatMap((run) => summaryLeaves(run.output).map(([path]) => path)))].slice(0, MAX_SUMMARY_COLUMNS);
  const toggle = (id: string) => setSelected((s) => (s.includes(id) ? s.filter((x) => x !== id) : [...s, id]));
  const compare = () => navigate(`${project.base}/evaluations/compare?ids=${selected.map(seg).join(",")}`);
  return (
    <div className="page">
      <h2>Evaluations</h2>
      <ErrorBox error={runs.error} />
      <div className="filters">
        <button onClick={compare} disabled={selected.length < 2}>
          Compare {selected.length >= 2 ? selected.length : ""} selected
        </button>
        <span className="muted small">select two or more runs to compare them row by row</span>
      </div>
      <Loading when={runs.loading} />
      {!runs.loading && list.length === 0 && !runs.error && <p className="muted">No evaluation runs: `Evaluation.evaluate` calls appear here.</p>}
      {list.length > 0 && (
        <table className="plain" aria-label="Evaluation runs">
          <thead>
            <tr>
              <th />
              <th>evaluation</th>
              <th>model</th>
              <th>status</th>
              <th>started</th>
              <th>latency</th>
              {columns.map((c) => (
                <th key={c}>{c}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {list.map((run) => {
              const leaves = new Map(summaryLeaves(run.output));
              return (
                <tr key={run.id} data-run-id={run.id}>
                  <td>
                    <input type="checkbox" aria-label={`select ${run.id}`} checked={selected.includes(run.id)} onChange={() => toggle(run.id)} />
                  </td>
                  <td>
                    <Link to={`${project.base}/calls/${seg(run.id)}`}>{nameOfRef(run.inputs?.self) || run.display_name || run.id}</Link>
                  </td>
                  <td>{nameOfRef(run.inputs?.model)}</td>
                  <td>
                    <StatusBadge status={statusOf(run)} />
                  </td>
                  <td>{formatTime(run.started_at)}</td>
                  <td>{formatDuration(latencyMs(run))}</td>
                  {columns.map((c) => (
                    <td key={c} className="num">
                      {formatScore(leaves.get(c))}
                    </td>
                  ))}
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

interface Sort {
  field: string;
  direction: "asc" | "desc";
  evaluation_call_id?: string;
}

const leafKey = (s: ScorerStats): string => (s.path ? `${s.scorer_key}.${s.path}` : s.scorer_key);

/** A trial's score at `scorer[.path]`. */
function scoreAt(trial: EvalTrial, leaf: string): Json | undefined {
  let v: Json | undefined = trial.scores;
  for (const part of leaf.split(".")) {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
    v = v[part];
  }
  return v;
}

/** The mean of a row's trials at a leaf (booleans count as 0/1), or the value when there is one trial. */
function rowScore(trials: EvalTrial[], leaf: string): number | boolean | null {
  const values = trials.map((t) => scoreAt(t, leaf)).filter((v): v is number | boolean => typeof v === "number" || typeof v === "boolean");
  if (values.length === 0) return null;
  if (values.length === 1) return values[0]!;
  return values.reduce<number>((sum, v) => sum + Number(v), 0) / values.length;
}

export function EvaluationComparePage({ project, ids }: { project: ProjectRef; ids: string[] }) {
  const [sort, setSort] = useState<Sort | null>(null);
  const results = usePaged(
    ({ offset, limit }, signal) =>
      postJson<EvalResults>(
        `/v2/${seg(project.entity)}/${seg(project.project)}/eval_results/query`,
        { evaluation_call_ids: ids, include_summary: true, include_raw_data_rows: true, resolve_row_refs: true, sort_by: sort ? [sort] : null, limit, offset },
        signal,
      ),
    [project.projectId, ids.join(","), sort],
    { size: COMPARE_PAGE },
  );
  const data = results.page;
  const evals = data?.summary?.evaluations ?? [];
  const labels = new Map(evals.map((e, i) => [e.evaluation_call_id, `${String.fromCharCode(65 + (i % 26))} · ${nameOfRef(e.model_ref) || e.display_name || e.evaluation_call_id}`]));
  const leaves = [...new Set(evals.flatMap((e) => e.scorer_stats.map(leafKey)))];
  const sortBy = (field: string, evaluationCallId?: string) => {
    setSort((s) => ({ field, evaluation_call_id: evaluationCallId, direction: s?.field === field && s.evaluation_call_id === evaluationCallId && s.direction === "desc" ? "asc" : "desc" }));
  };
  const arrow = (field: string, evaluationCallId?: string) => (sort?.field === field && sort.evaluation_call_id === evaluationCallId ? (sort.direction === "desc" ? " ▼" : " ▲") : "");
  return (
    <div className="page compare-page">
      <h2>
        Compare {ids.length} evaluations <Link to={`${project.base}/evaluations`} className="small">back to the list</Link>
      </h2>
      {ids.length < 2 && <ErrorBox error="Choose two or more evaluation runs on the Evaluations page." />}
      <ErrorBox error={results.error} />
      {(data?.warnings ?? []).map((w) => (
        <p key={w} className="muted warning">
          {w}
        </p>
      ))}
      <Loading when={results.loading} />
      {evals.length > 0 && <CompareSummary evals={evals} labels={labels} leaves={leaves} base={project.base} />}
      {data && (
        <>
          <h3>Rows ({data.total_rows})</h3>
          <div className="compare-scroll">
            <table className="plain compare" aria-label="Compared rows">
              <thead>
                <tr>
                  <th rowSpan={2}>input</th>
                  <th colSpan={evals.length}>output</th>
                  {leaves.map((leaf) => (
                    <th key={leaf} colSpan={evals.length} className="sortable group" onClick={() => sortBy(`scores.${leaf}`)}>
                      {leaf}
                      {arrow(`scores.${leaf}`)}
                    </th>
                  ))}
                </tr>
                <tr>
                  {evals.map((e) => (
                    <th key={e.evaluation_call_id}>{labels.get(e.evaluation_call_id)}</th>
                  ))}
                  {leaves.flatMap((leaf) =>
                    evals.map((e) => (
                      <th key={`${leaf}-${e.evaluation_call_id}`} className="sortable" title={`sort by ${leaf} of ${labels.get(e.evaluation_call_id)}`} onClick={() => sortBy(`scores.${leaf}`, e.evaluation_call_id)}>
                        {labels.get(e.evaluation_call_id)?.slice(0, 1)}
                        {arrow(`scores.${leaf}`, e.evaluation_call_id)}
                      </th>
                    )),
                  )}
                </tr>
              </thead>
              <tbody>
                {data.rows.map((row) => {
                  const trialsOf = (id: string) => row.evaluations.find((e) => e.evaluation_call_id === id)?.trials ?? [];
                  const outputs = evals.map((e) => trialsOf(e.evaluation_call_id)[0]?.model_output);
                  const outputsDiffer = new Set(outputs.map((o) => JSON.stringify(o ?? null))).size > 1;
                  return (
                    <tr key={row.row_digest} data-row-digest={row.row_digest}>
                      <td className="compare-input">
                        <JsonView value={row.raw_data_row} projectId={project.projectId} openDepth={1} />
                      </td>
                      {outputs.map((o, i) => (
                        <td key={evals[i]!.evaluation_call_id} className={`compare-output${outputsDiffer ? " diff" : ""}`}>
                          {trialsOf(evals[i]!.evaluation_call_id).length === 0 ? <span className="muted">no trial</span> : <JsonView value={o} projectId={project.projectId} openDepth={1} />}
                        </td>
                      ))}
                      {leaves.flatMap((leaf) => (
                        <ScoreCells key={leaf} leaf={leaf} values={evals.map((e) => rowScore(trialsOf(e.evaluation_call_id), leaf))} />
                      ))}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <PageControls paged={results} total={data.total_rows} />
        </>
      )}
    </div>
  );
}

/** One cell per evaluation; when they differ, all are marked and the highest marked best. */
function ScoreCells({ leaf, values }: { leaf: string; values: (number | boolean | null)[] }) {
  const known = values.filter((v): v is number | boolean => v !== null);
  const differ = new Set(values.map((v) => (v === null ? "null" : String(v)))).size > 1;
  const best = known.length > 0 ? Math.max(...known.map(Number)) : null;
  return (
    <>
      {values.map((v, i) => (
        <td key={`${leaf}-${i}`} className={`num score${differ ? " diff" : ""}${differ && v !== null && Number(v) === best ? " best" : ""}`}>
          {formatScore(v)}
        </td>
      ))}
    </>
  );
}

function CompareSummary({ evals, labels, leaves, base }: { evals: NonNullable<EvalResults["summary"]>["evaluations"]; labels: Map<string, string>; leaves: string[]; base: string }) {
  const figure = (stats: ScorerStats[], leaf: string): number | null => {
    const s = stats.find((x) => leafKey(x) === leaf);
    return s ? (s.value_type === "binary" ? (s.pass_rate ?? null) : (s.numeric_mean ?? null)) : null;
  };
  return (
    <table className="plain" aria-label="Evaluation summaries">
      <thead>
        <tr>
          <th />
          <th>evaluation</th>
          <th>model</th>
          <th>trials</th>
          {leaves.map((leaf) => (
            <th key={leaf}>{leaf}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {evals.map((e) => (
          <tr key={e.evaluation_call_id}>
            <td>
              <Link to={`${base}/calls/${seg(e.evaluation_call_id)}`}>{labels.get(e.evaluation_call_id)?.slice(0, 1)}</Link>
            </td>
            <td>{nameOfRef(e.evaluation_ref)}</td>
            <td>{nameOfRef(e.model_ref)}</td>
            <td className="num">{e.trial_count}</td>
            {leaves.map((leaf) => {
              const values = evals.map((x) => figure(x.scorer_stats, leaf));
              const v = figure(e.scorer_stats, leaf);
              const known = values.filter((x): x is number => x !== null);
              const best = known.length > 1 && new Set(known).size > 1 && v === Math.max(...known);
              return (
                <td key={leaf} className={`num${best ? " best" : ""}`}>
                  {formatScore(v)}
                  {e.scorer_stats.find((x) => leafKey(x) === leaf)?.value_type === "binary" ? " pass rate" : ""}
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
