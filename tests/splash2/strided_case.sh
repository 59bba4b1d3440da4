#!/bin/sh
# strided_case.sh SVMRUN LIBSVM MACHINE_CHECK -- PROGRAM ARGS...
#
# A program whose threads walk columns of row-major data (fft at a size whose
# rows span pages) on 2 nodes x 1 thread, under svmrun with --stats: its
# answer verified by the program (-t), and the pages fetched along the
# strides fetched in strided runs (Node::FetchStrided): some pages fetched
# along a stride, and fewer fetches than such pages (a fetch a page, as
# before strided runs, makes at least as many). Skips (77) as svm_case.sh
# does on a machine that lacks the fault backend's kernel feature.
set -u
svmrun=$1 libsvm=$2 check=$3
shift 3
[ "${1:-}" = "--" ] && shift
"$check" --machine-check "${SVM_FAULT:-uffd}" || exit $?
stats=$(mktemp) || exit 1
trap 'rm -f "$stats"' EXIT
echo "+ svmrun -n 2 -t 1 --stats $stats -- $*"
"$svmrun" -n 2 -t 1 --timeout 120 --stats "$stats" --preload "$libsvm" -- "$@" || exit $?
python3 - "$stats" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
print(f"fetches {c['fetches']}, pages fetched {c['pages_fetched']}, along strides {c['pages_strided']}")
if c["pages_strided"] < 100:
    sys.exit("strided_case: hardly any pages fetched along a stride: the case no longer walks strides")
if c["fetches"] >= c["pages_strided"]:
    sys.exit("strided_case: as many fetches as pages along strides: no strided runs")
PY
