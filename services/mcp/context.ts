import type { Principal } from "../auth/keys.js";
import type { CallsQueryDeps } from "../query/callsRoutes.js";
import type { CostsRepository } from "../store/costs/costsRepository.js";
import type { ProjectsRepository } from "../store/projects/projectsRepository.js";
import type { ThreadsReadRepository } from "../store/threads/threadsRead.js";
import type { StatsRepository } from "../store/usage/statsRead.js";
import type { UsageRepository } from "../store/usage/usageRead.js";

/** The repositories the tools read through: the ones the REST read routes use. */
export interface McpReads {
  readonly calls: CallsQueryDeps;
  readonly threads: ThreadsReadRepository;
  readonly usage: UsageRepository;
  readonly stats: StatsRepository;
  readonly costs: CostsRepository;
  readonly projects: ProjectsRepository;
}

/** What a tool call knows of its request. */
export interface ToolContext {
  readonly principal: Principal;
  /**
   * The project, once the key is known to reach it (else a ForbiddenError, answered as a tool
   * error) and the writes queued for it are stored (read-your-writes, as for every read).
   */
  reach(projectId: string): Promise<string>;
}
