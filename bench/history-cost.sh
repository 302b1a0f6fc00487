#!/usr/bin/env bash
# What the history costs (issue 34): recording a result, and reading a large history.
#
#   1. imports every result under DIR (runs, searches, experiment steps written earlier) into a
#      new SQLite history, timed: each record reads result.json and the interval log (for the
#      run's own interval by sectioning), then is one transaction;
#   2. grows that history to N records (default 10,000) by copying its rows in SQL (each copy
#      a distinct result in the same series), then times what reads it: the list of series,
#      one series, the CI check, the page (and the page's size);
#   3. times recording one more result into the large history, as a run's end does.
#
# Usage: bench/history-cost.sh DIR [N]     Results: printed, and $OUT (default /tmp/history-cost).
# Run it alone on the machine; needs sqlite3 (Debian's sqlite3) for step 2.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:?give a directory of caplab results, e.g. an experiment directory}
N=${2:-10000}
OUT=${OUT:-/tmp/history-cost}
source bench/fresh-node.sh
caplab=$CAPLAB
rm -rf "$OUT"
mkdir -p "$OUT"
db="$OUT/history.db"

secs() { # run "$@", print its wall time in seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$OUT/last.out" 2>&1
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

t=$(secs $caplab history --history "$db" import "$DIR")
added=$(grep -oE '[0-9]+ added' "$OUT/last.out" | grep -oE '[0-9]+')
logs=$(find "$DIR" -name latency.hlog -print0 | du -ch --files0-from=- | tail -1 | cut -f1)
printf 'import: %s records in %.2f s (%.1f ms each, process start included), reading %s of interval logs\n' \
  "$added" "$t" "$(echo "$t * 1000 / $added" | bc -l)" "$logs"

have=$(sqlite3 "$db" "SELECT count(*) FROM runs")
cols=$(sqlite3 "$db" "SELECT group_concat(name, ', ') FROM pragma_table_info('runs') WHERE name NOT IN ('id', 'result_key', 'started_at')")
copies=$(( (N + have - 1) / have - 1 ))
for i in $(seq 1 "$copies"); do
  # Each copy a day later than the one before, a distinct result of the same series.
  sqlite3 "$db" "INSERT INTO runs (result_key, started_at, $cols) SELECT result_key || ' copy $i',
    strftime('%Y-%m-%dT%H:%M:%fZ', started_at, '+$i days'), $cols FROM runs WHERE result_key NOT LIKE '% copy %'"
done
total=$(sqlite3 "$db" "SELECT count(*) FROM runs")
series=$(sqlite3 "$db" "SELECT count(DISTINCT series) FROM runs")
echo "history grown to $total records in $series series ($(du -h "$db" | cut -f1))"
one=$(sqlite3 "$db" "SELECT series FROM runs GROUP BY series ORDER BY count(*) DESC LIMIT 1")
for what in "list:history" "one series ($(sqlite3 "$db" "SELECT count(*) FROM runs WHERE series = '$one'") records):history ${one:0:8}" \
  "check:history check --fail-on never" "page:history page --out $OUT/history.html"; do
  name=${what%%:*}
  # shellcheck disable=SC2086
  t=$(secs $caplab ${what#*:} --history "$db")
  printf '%-36s %.2f s\n' "$name" "$t"
done
echo "page: $(du -h "$OUT/history.html" | cut -f1)"
last=$(find "$DIR" -name result.json -printf '%h\n' | head -1)
sqlite3 "$db" "DELETE FROM runs WHERE dir = '$(realpath "$last")' AND result_key NOT LIKE '% copy %'"
t=$(secs $caplab history --history "$db" import "$last")
printf 'recording one run into %s records: %.0f ms (process start included)\n' "$total" "$(echo "$t * 1000" | bc -l)"
