import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync, existsSync } from "node:fs";
import { get } from "node:http";
import { createServer } from "node:net";
import { join, resolve } from "node:path";

/**
 * Runs a private ClickHouse server with its data under `dataDir`, for `make start` without
 * CLICKHOUSE_URL and for the test suite. Memory settings are kept modest: on a 2-core
 * machine ClickHouse shares the host with the service and the tests.
 */
export interface LocalClickHouse {
  readonly url: string;
  readonly httpPort: number;
  readonly tcpPort: number;
  /** Where the server writes its logs (server.log, error.log). */
  readonly logDir: string;
  /** Resolves with how the server process ended, whoever ended it. */
  readonly exited: Promise<ServerExit>;
  /** SIGTERM, then SIGKILL if the server has not exited STOP_GRACE_MS later; resolves with how it ended. */
  stop(): Promise<ServerExit>;
}

export interface ServerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

const STOP_GRACE_MS = 10_000;

export const CLICKHOUSE_SERVER_BIN = "/usr/sbin/clickhouse-server";

/**
 * `count` distinct ports free on loopback now: all are held open together while the kernel
 * picks them (one at a time, a port just closed can come back, and two servers were given
 * the same one).
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (srv) =>
          new Promise<number>((resolvePort, reject) => {
            srv.once("error", reject);
            srv.listen(0, "127.0.0.1", () => {
              const address = srv.address();
              resolvePort(typeof address === "object" && address ? address.port : 0);
            });
          }),
      ),
    );
  } finally {
    await Promise.all(servers.map((srv) => new Promise<void>((done) => (srv.listening ? srv.close(() => done()) : done()))));
  }
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/**
 * CLICKHOUSE_LOG_QUERIES=1 (diagnosis): the local server keeps `system.query_log` and
 * `system.part_log`, to see what each query and each insert's parts and merges cost.
 */
export const LOG_QUERIES = process.env.CLICKHOUSE_LOG_QUERIES === "1";
const QUERY_AND_PART_LOGS = ["query_log", "part_log"]
  .map((table) => `<${table}><database>system</database><table>${table}</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></${table}>`)
  .join("");

/**
 * Every merge vertical (a column at a time) rather than only those of 131,072 rows or more and
 * 11 columns or more: a horizontal merge copies row by row, every column of the row, and the
 * wide rows of `calls` (their arrays of leaves) made its merges the larger half of ClickHouse's
 * CPU under ingest. Merges of `calls` took a third to a half of the time with it
 * (docs/benchmarks.md, "Vertical merges"). Engines a vertical merge does not serve (Aggregating,
 * Summing) still merge horizontally.
 */
const VERTICAL_MERGES = `<merge_tree><vertical_merge_algorithm_min_rows_to_activate>1</vertical_merge_algorithm_min_rows_to_activate><vertical_merge_algorithm_min_columns_to_activate>1</vertical_merge_algorithm_min_columns_to_activate></merge_tree>`;

/**
 * Bounded disk: ClickHouse keeps a system log table (query, query thread, part, trace, metric,
 * text logs...) only for a section of its config that names it, and this config names none
 * (but the diagnosis logs above, when asked for): the server writes no log tables at all
 * (test/store/localServer.test.ts). Its text logs are capped at two files of 50 MB each.
 *
 * The server's config.xml, data and logs under `dir`; `extra` adds elements (the cluster
 * harness, scripts/clickhouseCluster.ts: remote servers, ZooKeeper, macros).
 */
export function serverConfigXml(dir: string, httpPort: number, tcpPort: number, extra = ""): string {
  return `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/log/server.log</log><errorlog>${dir}/log/error.log</errorlog><size>50M</size><count>2</count></logger>
  <http_port>${httpPort}</http_port>
  <tcp_port>${tcpPort}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>200</max_concurrent_queries>
  <keep_alive_timeout>30</keep_alive_timeout>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mlock_executable>false</mlock_executable>
  ${VERTICAL_MERGES}${LOG_QUERIES ? QUERY_AND_PART_LOGS : ""}${extra}
</yandex>
`;
}

/** The users.xml beside it: the passwordless local `default` user with modest memory and threads. */
export const SERVER_USERS_XML = `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage><max_threads>2</max_threads>${LOG_QUERIES ? "<log_queries>1</log_queries>" : ""}</default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`;

async function waitForPing(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`clickhouse-server exited with code ${child.exitCode}`);
    if (await pings(url)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`clickhouse-server did not answer at ${url} within ${timeoutMs} ms`);
}

/**
 * One `/ping` on a connection of its own, closed after the answer: a connection kept alive
 * (as `fetch` keeps them) would hold up the server's stop by its whole shutdown wait.
 */
export function pings(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get(`${url}/ping`, { agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode === 200));
    });
    req.on("error", () => resolve(false)); // not listening yet
  });
}

export async function startLocalClickHouse(dataDir: string, ports?: { http?: number; tcp?: number }): Promise<LocalClickHouse> {
  if (!existsSync(CLICKHOUSE_SERVER_BIN)) {
    throw new Error(`${CLICKHOUSE_SERVER_BIN} not found: install clickhouse-server (make start does) or set CLICKHOUSE_URL`);
  }
  const dir = resolve(dataDir, "clickhouse");
  for (const sub of ["log", "tmp", "user_files", "format_schemas"]) mkdirSync(join(dir, sub), { recursive: true });
  const [freeHttp, freeTcp] = await freePorts(2);
  const httpPort = ports?.http ?? freeHttp!;
  const tcpPort = ports?.tcp ?? freeTcp!;
  writeFileSync(join(dir, "config.xml"), serverConfigXml(dir, httpPort, tcpPort));
  writeFileSync(join(dir, "users.xml"), SERVER_USERS_XML);
  // Its own process group: a Ctrl-C in the terminal reaches the service, which drains its
  // queue into this server and only then stops it. If the service exits any other way
  // than SIGKILL, the server is stopped with it.
  const child = spawn(CLICKHOUSE_SERVER_BIN, [`--config-file=${join(dir, "config.xml")}`], {
    stdio: ["ignore", "ignore", "ignore"],
    detached: true,
  });
  const stopWithUs = () => child.kill("SIGTERM");
  process.once("exit", stopWithUs);
  const exited = new Promise<ServerExit>((done) =>
    child.once("exit", (code, signal) => {
      process.removeListener("exit", stopWithUs);
      done({ code, signal });
    }),
  );
  const url = `http://127.0.0.1:${httpPort}`;
  await waitForPing(url, child, 30_000);
  return {
    url,
    httpPort,
    tcpPort,
    logDir: join(dir, "log"),
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS).unref();
      }
      return exited;
    },
  };
}
