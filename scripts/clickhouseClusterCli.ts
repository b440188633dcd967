import { clusterStatus, readClusterState, startCluster, startNode, startZooKeeper, stopCluster, stopNode, stopZooKeeper } from "./clickhouseCluster.js";
import { errorText } from "../services/errors.js";

/** The command line of scripts/clickhouse-cluster.sh (usage below). */
const USAGE = `usage: scripts/clickhouse-cluster.sh <command> <dir> [node]
  start <dir>                 ZooKeeper and the four ClickHouse nodes, unless running; waits until ready
  stop <dir>                  stops them all (data kept)
  status <dir>                each process: pid, running, ready; and cluster.json (ports)
  start-node <dir> <node>     one node (ch11, ch12, ch21, ch22)
  stop-node <dir> <node>      one node, SIGTERM
  kill-node <dir> <node>      one node, SIGKILL
  start-zookeeper <dir> | stop-zookeeper <dir>`;

async function main(): Promise<void> {
  const [command, dir, node] = process.argv.slice(2);
  if (!command || !dir) throw new Error(USAGE);
  const needNode = (): string => {
    if (!node) throw new Error(USAGE);
    return node;
  };
  switch (command) {
    case "start": {
      const state = await startCluster(dir);
      console.log(`cluster ${state.cluster} ready: ${state.nodes.map((n) => `${n.name} ${n.url}`).join(", ")}; ZooKeeper 127.0.0.1:${state.zookeeper.port}`);
      return;
    }
    case "stop":
      return stopCluster(dir);
    case "status": {
      for (const s of await clusterStatus(dir)) console.log(`${s.name.padEnd(10)} pid ${String(s.pid ?? "-").padEnd(8)} ${s.running ? "running" : "stopped"}${s.ready ? ", ready" : ""}`);
      console.log(JSON.stringify(readClusterState(dir), null, 2));
      return;
    }
    case "start-node":
      return startNode(dir, needNode());
    case "stop-node":
      return stopNode(dir, needNode());
    case "kill-node":
      return stopNode(dir, needNode(), "SIGKILL");
    case "start-zookeeper":
      return startZooKeeper(dir);
    case "stop-zookeeper":
      return stopZooKeeper(dir);
    default:
      throw new Error(USAGE);
  }
}

main().catch((err: unknown) => {
  console.error(errorText(err));
  process.exit(1);
});
