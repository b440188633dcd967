.PHONY: install start test typecheck bench

install:
	@bash scripts/install.sh

## Runs ingest, worker and query in one process (a local ClickHouse under DATA_DIR unless CLICKHOUSE_URL is set).
start: install
	npx tsx services/main.ts

## The whole suite against a real ClickHouse and a Kafka-protocol broker it starts itself.
test: install
	npx tsc --noEmit -p .
	npx vitest run

typecheck: install
	npx tsc --noEmit -p .

## Benchmarks: print figures, not part of `make test`.
bench: install
	npx tsx bench/run.ts
