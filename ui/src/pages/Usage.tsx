import { useMemo, useState } from "react";
import { postJson } from "../api";
import type { ProjectRef } from "../project";
import { PALETTE, TimeChart, type Series } from "../components/Chart";
import { ErrorBox, Loading, Section } from "../components/common";
import { formatCost, formatNumber } from "../format";
import { useLoad } from "../hooks";

type Bucket = Record<string, number | string | null>;
interface StatsRes {
  start: string;
  end: string;
  granularity: number;
  call_buckets: Bucket[];
  usage_buckets: Bucket[];
}

const RANGES: [string, number][] = [
  ["last hour", 3600],
  ["last 24 hours", 86_400],
  ["last 7 days", 7 * 86_400],
  ["last 30 days", 30 * 86_400],
];

const num = (v: number | string | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));
const seconds = (iso: string | number | null | undefined) => Date.parse(String(iso)) / 1000;

export function UsagePage({ project }: { project: ProjectRef }) {
  const [range, setRange] = useState(86_400);
  const [end, setEnd] = useState(() => Date.now());
  const stats = useLoad(
    (signal) =>
      postJson<StatsRes>(
        "/calls/stats",
        {
          project_id: project.projectId,
          start: new Date(end - range * 1000).toISOString(),
          end: new Date(end).toISOString(),
          timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
          call_metrics: [
            { metric: "call_count", aggregations: ["sum"] },
            { metric: "error_count", aggregations: ["sum"] },
            { metric: "latency_ms", aggregations: [], percentiles: [50, 95, 99] },
          ],
          usage_metrics: [
            { metric: "total_tokens", aggregations: ["sum"] },
            { metric: "total_cost", aggregations: ["sum"] },
          ],
        },
        signal,
      ),
    [project.projectId, range, end],
  );
  const charts = useMemo(() => (stats.data ? chartsOf(stats.data) : null), [stats.data]);
  return (
    <div className="page usage-page">
      <h2>Usage</h2>
      <div className="filters">
        <select aria-label="Range" value={range} onChange={(e) => setRange(Number(e.target.value))}>
          {RANGES.map(([label, s]) => (
            <option key={s} value={s}>
              {label}
            </option>
          ))}
        </select>
        <button onClick={() => setEnd(Date.now())}>Refresh</button>
        {stats.data && <span className="muted small">buckets of {formatNumber(stats.data.granularity)} s</span>}
      </div>
      <ErrorBox error={stats.error} />
      <Loading when={stats.loading} />
      {charts && (
        <>
          <TimeChart title="Calls and errors" times={charts.times} series={charts.calls} bars />
          <TimeChart title="Latency (ms)" times={charts.times} series={charts.latency} unit=" ms" />
          {charts.tokens.length > 0 && <TimeChart title="Tokens per model" times={charts.times} series={charts.tokens} />}
          <Section title="Tokens and cost per model over the range">
            {charts.models.length === 0 ? (
              <p className="muted">No usage in this range.</p>
            ) : (
              <table className="plain" aria-label="Usage per model">
                <thead>
                  <tr>
                    <th>model</th>
                    <th>tokens</th>
                    <th>cost</th>
                  </tr>
                </thead>
                <tbody>
                  {charts.models.map((m) => (
                    <tr key={m.model}>
                      <td>{m.model}</td>
                      <td>{formatNumber(m.tokens)}</td>
                      <td>{formatCost(m.cost)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>
        </>
      )}
    </div>
  );
}

function chartsOf(res: StatsRes) {
  const times = res.call_buckets.map((b) => seconds(b.timestamp));
  const col = (key: string) => res.call_buckets.map((b) => num(b[key]));
  const calls: Series[] = [
    { label: "calls", values: col("sum_call_count"), color: PALETTE[0]! },
    { label: "errors", values: col("sum_error_count"), color: PALETTE[1]! },
  ];
  const latency: Series[] = [
    { label: "p50", values: col("p50_latency_ms"), color: PALETTE[2]! },
    { label: "p95", values: col("p95_latency_ms"), color: PALETTE[3]! },
    { label: "p99", values: col("p99_latency_ms"), color: PALETTE[1]! },
  ];
  const index = new Map(times.map((t, i) => [t, i]));
  const perModel = new Map<string, { tokens: (number | null)[]; total: number; cost: number }>();
  for (const b of res.usage_buckets) {
    const model = String(b.model);
    let m = perModel.get(model);
    if (!m) perModel.set(model, (m = { tokens: times.map(() => null), total: 0, cost: 0 }));
    const i = index.get(seconds(b.timestamp));
    const tokens = num(b.sum_total_tokens) ?? 0;
    if (i !== undefined) m.tokens[i] = (m.tokens[i] ?? 0) + tokens;
    m.total += tokens;
    m.cost += num(b.sum_total_cost) ?? 0;
  }
  const models = [...perModel].map(([model, m]) => ({ model, tokens: m.total, cost: m.cost })).sort((a, b) => b.tokens - a.tokens);
  const tokens: Series[] = [...perModel].map(([model, m], i) => ({ label: model, values: m.tokens, color: PALETTE[i % PALETTE.length]! }));
  return { times, calls, latency, tokens, models };
}
