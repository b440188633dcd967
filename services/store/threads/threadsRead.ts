import type { ClickHouseStore } from "../clickhouse.js";
import type { ThreadRow } from "./threadRows.js";
import type { ProjectRetention } from "../projects/retention.js";
import { threadsPageQuery, threadsThresholdQuery, type ThreadsQuerySpec } from "./threadsQuery.js";

/** Pages reaching further than this are read without a window. */
export const WINDOWED_MAX_ROWS = 10_000;
/** Candidates per wanted row: room for older versions not merged yet. */
const CANDIDATES_PER_ROW = 4;

/** Read side of threads: pages of the pre-aggregated figures. */
export class ThreadsReadRepository {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly retention: ProjectRetention,
  ) {}

  /**
   * Streams a page of threads. A bounded page is read in two steps (see threadsPageQuery):
   * the threshold of the first sort field at rank 4 × (offset + limit) among the stored
   * versions, then FINAL over the threads on its near side only. When there is no threshold
   * (few threads, or NULL percentiles reached) or the windowed page comes back short, the
   * page is read whole: the window only ever saves work, it never changes the answer.
   */
  async *stream(asked: ThreadsQuerySpec): AsyncGenerator<ThreadRow> {
    const spec = { ...asked, retainedFrom: await this.retention.cutoff(asked.projectId) };
    const wanted = (spec.offset ?? 0) + (spec.limit ?? Infinity);
    if (spec.limit === null || spec.limit === undefined || spec.limit === 0 || wanted > WINDOWED_MAX_ROWS) {
      yield* this.store.stream<ThreadRow>("threads_page", threadsPageQuery(spec));
      return;
    }
    const [bound] = await this.store.rows<{ threshold: string | number | null }>(
      "threads_page_threshold",
      threadsThresholdQuery(spec, wanted * CANDIDATES_PER_ROW),
    );
    if (bound && bound.threshold !== null) {
      const rows = await this.store.rows<ThreadRow>("threads_page_window", threadsPageQuery(spec, { threshold: bound.threshold }));
      if (rows.length >= spec.limit) {
        yield* rows;
        return;
      }
    }
    yield* this.store.stream<ThreadRow>("threads_page", threadsPageQuery(spec));
  }
}
