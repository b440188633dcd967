import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { errorMessage, postLines } from "../api";
import type { ProjectRef } from "../project";
import { ErrorBox, StatusBadge } from "../components/common";
import { formatCost, formatDuration, formatNumber, formatTime, latencyMs, opName, statusOf } from "../format";
import { usePaged } from "../hooks";
import { navigate, seg } from "../router";
import { useTraceTotals, type TraceTotals } from "../traceTotals";
import type { Call, CallStatus, Json } from "../types";

const PAGE = 100;
const ROW_HEIGHT = 32;
const POLL_MS = 5000;
const COLUMNS = ["id", "op_name", "display_name", "trace_id", "parent_id", "started_at", "ended_at", "exception", "summary", "wb_user_id"];

interface Column {
  readonly label: string;
  /** The field `sort_by` names; null where the API cannot sort. */
  readonly sortField: string | null;
  /** `t`: the totals of the call's trace below it, once asked (traceTotals.ts). */
  readonly cell: (c: Call, t: TraceTotals | undefined) => React.ReactNode;
  readonly width: string;
}

const COLUMNS_SHOWN: Column[] = [
  { label: "Op", sortField: "op_name", cell: (c) => opName(c), width: "minmax(180px, 2fr)" },
  { label: "Status", sortField: "summary.weave.status", cell: (c, t) => <StatusBadge status={statusWithTrace(c, t)} />, width: "150px" },
  { label: "Started", sortField: "started_at", cell: (c) => formatTime(c.started_at), width: "200px" },
  { label: "Latency", sortField: "summary.weave.latency_ms", cell: (c) => formatDuration(latencyMs(c)), width: "100px" },
  { label: "Tokens", sortField: "summary.weave.total_tokens", cell: (_, t) => (t?.tooLarge ? <TooLarge /> : formatNumber(t?.tokens)), width: "90px" },
  { label: "Cost", sortField: "summary.weave.costs_total", cell: (_, t) => (t?.tooLarge ? <TooLarge /> : formatCost(t?.cost)), width: "110px" },
  { label: "User", sortField: "wb_user_id", cell: (c) => c.wb_user_id ?? "", width: "minmax(80px, 1fr)" },
];
const GRID = COLUMNS_SHOWN.map((c) => c.width).join(" ");

/** The call's own status, or "descendant error" when it succeeded and a call below it failed (known for trace roots). */
function statusWithTrace(c: Call, t: TraceTotals | undefined): CallStatus {
  const own = statusOf(c);
  return own === "success" && t?.descendantError ? "descendant_error" : own;
}

const TooLarge = () => <span title="The trace holds too many calls to count at once">—</span>;

interface Filters {
  op: string;
  status: CallStatus | "";
  from: string;
  to: string;
  expr: string;
  allCalls: boolean;
}

type Expr = Record<string, Json>;

/** The filters as a `$expr` (op and status by computed fields; the time range on started_at). */
function queryOf(f: Filters): { $expr: Expr } | null {
  const parts: Expr[] = [];
  if (f.op.trim()) parts.push({ $contains: { input: { $getField: "op_name" }, substr: { $literal: f.op.trim() }, case_insensitive: true } });
  if (f.status) parts.push({ $eq: [{ $getField: "summary.weave.status" }, { $literal: f.status }] });
  if (f.from) parts.push({ $gte: [{ $getField: "started_at" }, { $literal: new Date(f.from).toISOString() }] });
  if (f.to) parts.push({ $not: [{ $gte: [{ $getField: "started_at" }, { $literal: new Date(f.to).toISOString() }] }] });
  if (f.expr.trim()) parts.push(exprOf(f.expr));
  if (parts.length === 0) return null;
  return { $expr: parts.length === 1 ? parts[0]! : { $and: parts } };
}

/** The `$expr` box's expression, with or without its `$expr` wrapper. */
function exprOf(text: string): Expr {
  try {
    const parsed = JSON.parse(text) as { $expr?: Expr } | Expr;
    return ("$expr" in parsed ? parsed.$expr : parsed) as Expr;
  } catch (err) {
    throw new Error(`The $expr box holds no valid JSON: ${errorMessage(err)}`);
  }
}

interface Sort {
  field: string;
  direction: "asc" | "desc";
}

export function TracesPage({ project }: { project: ProjectRef }) {
  const [draft, setDraft] = useState<Filters>({ op: "", status: "", from: "", to: "", expr: "", allCalls: false });
  const [filters, setFilters] = useState<Filters>(draft);
  const [sort, setSort] = useState<Sort>({ field: "started_at", direction: "desc" });
  // Pages of PAGE loaded as the table scrolls; the first page asked again every few seconds
  // and merged in front, so new calls appear without reloading (calls already shown are
  // replaced by their newer state).
  const calls = usePaged(
    async ({ offset, limit }, signal) => {
      const query = queryOf(filters);
      const body = {
        project_id: project.projectId,
        filter: filters.allCalls ? {} : { trace_roots_only: true },
        ...(query ? { query } : {}),
        sort_by: [sort, ...(sort.field === "started_at" ? [] : [{ field: "started_at", direction: "desc" }])],
        limit,
        offset,
        columns: COLUMNS,
      };
      return { rows: await postLines<Call>("/calls/stream_query", body, signal) };
    },
    [project.projectId, filters, sort],
    { size: PAGE, more: true, key: (c) => c.id, refreshMs: POLL_MS },
  );
  const rows = calls.rows;
  const totals = useTraceTotals(project.projectId, rows);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilters(draft);
  };
  const toggleSort = (field: string) =>
    setSort((s) => (s.field === field ? { field, direction: s.direction === "desc" ? "asc" : "desc" } : { field, direction: field === "op_name" || field === "wb_user_id" ? "asc" : "desc" }));

  return (
    <div className="page traces-page">
      <form className="filters" onSubmit={apply} aria-label="Filters">
        <input placeholder="Op name contains…" aria-label="Op" value={draft.op} onChange={(e) => setDraft({ ...draft, op: e.target.value })} />
        <select aria-label="Status" value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.target.value as Filters["status"] })}>
          <option value="">any status</option>
          <option value="running">running</option>
          <option value="success">success</option>
          <option value="error">error</option>
          <option value="descendant_error">descendant error</option>
        </select>
        <label className="small">
          from <input type="datetime-local" aria-label="From" value={draft.from} onChange={(e) => setDraft({ ...draft, from: e.target.value })} />
        </label>
        <label className="small">
          to <input type="datetime-local" aria-label="To" value={draft.to} onChange={(e) => setDraft({ ...draft, to: e.target.value })} />
        </label>
        <input className="expr" placeholder='$expr, e.g. {"$eq": [{"$getField": "inputs.x"}, {"$literal": 1}]}' aria-label="Expression" value={draft.expr} onChange={(e) => setDraft({ ...draft, expr: e.target.value })} />
        <label className="small">
          <input type="checkbox" checked={draft.allCalls} onChange={(e) => setDraft({ ...draft, allCalls: e.target.checked })} /> all calls
        </label>
        <button type="submit">Apply</button>
      </form>
      <ErrorBox error={calls.error} />
      <CallsGrid rows={rows} totals={totals} sort={sort} onSort={toggleSort} onEnd={calls.next} onOpen={(c) => navigate(`${project.base}/calls/${seg(c.id)}`)} />
      <div className="muted small table-foot">
        {calls.loading ? "Loading…" : `${rows.length.toLocaleString("en-US")} ${filters.allCalls ? "calls" : "traces"} shown${calls.hasMore ? ", more as you scroll" : ""}`}
      </div>
    </div>
  );
}

function CallsGrid({ rows, totals, sort, onSort, onEnd, onOpen }: { rows: readonly Call[]; totals: ReadonlyMap<string, TraceTotals>; sort: Sort; onSort: (field: string) => void; onEnd: () => void; onOpen: (c: Call) => void }) {
  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_HEIGHT, overscan: 10 });
  const items = virtual.getVirtualItems();
  const last = items[items.length - 1];
  useEffect(() => {
    if (last && last.index >= rows.length - 20) onEnd();
  }, [last?.index, rows.length, onEnd, last]);
  return (
    <div className="grid" role="table" aria-label="Calls">
      <div className="grid-head" role="row" style={{ gridTemplateColumns: GRID }}>
        {COLUMNS_SHOWN.map((col) => (
          <div key={col.label} role="columnheader" className={col.sortField ? "sortable" : ""} onClick={col.sortField ? () => onSort(col.sortField!) : undefined} title={col.sortField ? "sort" : "not sortable"}>
            {col.label}
            {col.sortField === sort.field ? (sort.direction === "desc" ? " ▼" : " ▲") : ""}
          </div>
        ))}
      </div>
      <div className="grid-body" ref={scroller}>
        <div style={{ height: virtual.getTotalSize(), position: "relative" }}>
          {items.map((item) => {
            const call = rows[item.index]!;
            return (
              <div
                key={call.id}
                role="row"
                className="grid-row"
                data-call-id={call.id}
                style={{ gridTemplateColumns: GRID, transform: `translateY(${item.start}px)`, height: ROW_HEIGHT }}
                onClick={() => onOpen(call)}
              >
                {COLUMNS_SHOWN.map((col) => (
                  <div key={col.label} role="cell">
                    {col.cell(call, totals.get(call.id))}
                  </div>
                ))}
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
