import type { ReactNode } from "react";
import type { CallStatus } from "../types";
import { STATUS_LABEL } from "../format";
import type { Paged, RowsPage } from "../hooks";

export function ErrorBox({ error }: { error: string | null | undefined }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      {error}
    </div>
  );
}

export function Loading({ when, children }: { when: boolean; children?: ReactNode }) {
  return when ? <div className="muted loading">{children ?? "Loading…"}</div> : null;
}

export function StatusBadge({ status }: { status: CallStatus }) {
  return <span className={`status status-${status}`}>{STATUS_LABEL[status]}</span>;
}

export function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="section">
      <h3>{title}</h3>
      {children}
    </section>
  );
}

/**
 * The controls of a paged list (hooks.ts `usePaged`): "show more" under pages shown one after
 * another; previous and next, with the place of the rows shown (of `total` when known), for
 * one page at a time.
 */
export function PageControls<P extends RowsPage>({ paged, total = null }: { paged: Paged<P>; total?: number | null }) {
  if (paged.more)
    return paged.hasMore && !paged.loading ? (
      <button className="link" onClick={paged.next}>
        show more
      </button>
    ) : null;
  const { from, rows, size } = paged;
  return (
    <div className="pager small">
      <button disabled={!paged.hasPrevious} onClick={paged.previous}>
        ‹ previous
      </button>
      <span>
        rows {rows.length === 0 ? 0 : from + 1}–{from + rows.length}
        {total !== null ? ` of ${total.toLocaleString("en-US")}` : ""}
      </span>
      <button disabled={!paged.hasMore || (total !== null && from + size >= total)} onClick={paged.next}>
        next ›
      </button>
    </div>
  );
}
