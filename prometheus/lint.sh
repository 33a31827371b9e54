#!/usr/bin/env bash
# lint.sh: the monitoring code's static checks (make lint). promtool checks
# both scrape configs (and the rule files they load), the rules, and runs the
# rule unit tests; then the Go checks of the dashboards and configs, gofmt,
# go vet (every build tag) and a tidy go.mod (direct dependencies not marked indirect).
set -euo pipefail
cd "$(dirname "$0")/.."

promtool=$(scripts/gobin.sh promtool)

echo "== promtool check config"
for cfg in prometheus/prometheus.yml prometheus/prometheus.bridge.yml; do
  "$promtool" check config --lint=all --lint-fatal "$cfg"
done

echo "== promtool check rules"
"$promtool" check rules --lint=all --lint-fatal prometheus/rules/*.rules.yml

echo "== promtool test rules"
"$promtool" test rules prometheus/rules/*_test.yml

echo "== dashboards and configs (go test)"
go test -count=1 ./grafana/dashcheck ./prometheus/scrapeconfig

echo "== gofmt"
unformatted=$(find . -name '*.go' -not -path './.cache/*' -not -path './.git/*' -print0 | xargs -0 gofmt -l)
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting (gofmt -w):" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "== go vet"
# One pass with every build tag of the repository: no file is built only
# without a tag, so this vets every file the untagged pass would.
go vet -tags e2e,swarm ./...
echo "== go mod tidy"
if ! d=$(go mod tidy -diff 2>&1); then
  echo "go.mod/go.sum are not tidy (run go mod tidy):" >&2
  echo "$d" | head -40 >&2
  exit 1
fi
echo "lint: ok"
