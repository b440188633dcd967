import { useState, type FormEvent } from "react";
import { AdminsOnly } from "../access";
import { postJson } from "../api";
import type { ProjectRef } from "../project";
import { ErrorBox, Loading, Section } from "../components/common";
import { formatTime } from "../format";
import { useAction, useLoad } from "../hooks";
import type { AlertRule, NewAlertRule } from "../types";

const METRICS: { value: NewAlertRule["metric"]; label: string }[] = [
  { value: "error_rate", label: "Error rate (0–1)" },
  { value: "latency_p99_ms", label: "Latency p99 (ms)" },
  { value: "cost_usd", label: "Cost (USD)" },
  { value: "tokens", label: "Tokens" },
  { value: "score_mean", label: "Mean monitor score" },
];
const metricLabel = (metric: string) => METRICS.find((m) => m.value === metric)?.label ?? metric;
const formatValue = (v: number | null) => (v === null ? "no data" : Number.isInteger(v) ? String(v) : v.toPrecision(4));

/** A project's alert rules (admins of its entity): each rule's state, last value and recent changes; rules made and deleted here. */
export function AlertsPage({ project }: { project: ProjectRef }) {
  return (
    <div className="page alerts-page">
      <h2>Alerts of {project.projectId}</h2>
      <AdminsOnly entity={project.entity}>
        <AlertRules project={project} />
      </AdminsOnly>
    </div>
  );
}

function AlertRules({ project }: { project: ProjectRef }) {
  const rules = useLoad((signal) => postJson<{ alerts: AlertRule[] }>("/alerts/query", { project_id: project.projectId }, signal).then((r) => r.alerts), [project.projectId]);
  const remove = useAction(async (id: string) => {
    await postJson("/alerts/delete", { project_id: project.projectId, id });
    rules.reload();
  });
  return (
    <>
      <Section title="Rules">
        <ErrorBox error={rules.error ?? remove.error} />
        <Loading when={rules.loading && !rules.data} />
        {rules.data?.length === 0 && <p className="muted">No alert rules yet.</p>}
        {rules.data && rules.data.length > 0 && (
          <table className="alerts">
            <thead>
              <tr>
                <th>Name</th>
                <th>Condition</th>
                <th>State</th>
                <th>Last value</th>
                <th>Evaluated</th>
                <th>Changes</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {rules.data.map((rule) => (
                <tr key={rule.id} className="alert-rule">
                  <td>{rule.name}</td>
                  <td>
                    {metricLabel(rule.metric)} {rule.comparison === "gt" ? ">" : "<"} {rule.threshold} over {rule.window_minutes} min
                  </td>
                  <td>
                    <span className={`badge alert-${rule.state}`}>{rule.state}</span>
                  </td>
                  <td>{formatValue(rule.last_value)}</td>
                  <td>{formatTime(rule.last_evaluated_at)}</td>
                  <td className="alert-history">{(rule.history ?? []).map((h) => `${h.state} at ${formatTime(h.at)} (${formatValue(h.value)})`).join("; ")}</td>
                  <td>
                    <button disabled={remove.busy} onClick={() => void remove.run(rule.id)}>
                      Delete {rule.name}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <button className="link" onClick={rules.reload}>
          Refresh
        </button>
      </Section>
      <Section title="New rule">
        <NewRuleForm project={project} onCreated={rules.reload} />
      </Section>
    </>
  );
}

function NewRuleForm({ project, onCreated }: { project: ProjectRef; onCreated: () => void }) {
  const [rule, setRule] = useState({ name: "", metric: "error_rate" as NewAlertRule["metric"], comparison: "gt" as NewAlertRule["comparison"], threshold: "", window: "5", webhook: "", ops: "", monitor: "", scorer: "" });
  const set = (field: keyof typeof rule) => (e: { target: { value: string } }) => setRule({ ...rule, [field]: e.target.value });
  const create = useAction(async () => {
    const ops = rule.ops.split(",").map((s) => s.trim()).filter(Boolean);
    await postJson("/alerts/create", {
      project_id: project.projectId,
      name: rule.name,
      metric: rule.metric,
      comparison: rule.comparison,
      threshold: Number(rule.threshold),
      window_minutes: Number(rule.window),
      webhook_url: rule.webhook,
      ...(ops.length > 0 ? { op_names: ops } : {}),
      ...(rule.metric === "score_mean" ? { monitor_ref: rule.monitor, scorer: rule.scorer } : {}),
    });
    setRule({ ...rule, name: "", threshold: "", webhook: "" });
    onCreated();
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run();
  };
  return (
    <form className="alert-form" onSubmit={submit}>
      <label>
        Name <input value={rule.name} onChange={set("name")} required />
      </label>
      <label>
        Metric{" "}
        <select value={rule.metric} onChange={set("metric")}>
          {METRICS.map((m) => (
            <option key={m.value} value={m.value}>
              {m.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Comparison{" "}
        <select value={rule.comparison} onChange={set("comparison")}>
          <option value="gt">above</option>
          <option value="lt">below</option>
        </select>
      </label>
      <label>
        Threshold <input type="number" step="any" value={rule.threshold} onChange={set("threshold")} required />
      </label>
      <label>
        Window in minutes <input type="number" min={1} step={1} value={rule.window} onChange={set("window")} required />
      </label>
      <label>
        Ops (comma-separated, optional) <input value={rule.ops} onChange={set("ops")} />
      </label>
      {rule.metric === "score_mean" && (
        <>
          <label>
            Monitor ref <input value={rule.monitor} onChange={set("monitor")} required />
          </label>
          <label>
            Scorer <input value={rule.scorer} onChange={set("scorer")} required />
          </label>
        </>
      )}
      <label>
        Webhook URL <input type="url" value={rule.webhook} onChange={set("webhook")} required />
      </label>
      <button type="submit" disabled={create.busy}>
        Create rule
      </button>
      <ErrorBox error={create.error} />
    </form>
  );
}
