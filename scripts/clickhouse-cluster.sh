#!/usr/bin/env bash
# A local ClickHouse cluster (ZooKeeper and 2 shards x 2 replicas of ClickHouse 18.16, cluster
# `tracehouse`) under one directory: start|stop|status <dir>, and one process at a time
# (scripts/clickhouseClusterCli.ts lists the commands). The suite's cluster stage uses the same code.
set -euo pipefail
cd "$(dirname "$0")/.."
exec npx tsx scripts/clickhouseClusterCli.ts "$@"
