#!/bin/sh
# svm_case.sh SVMRUN LIBSVM PROBE NODES THREADS TIMEOUT -- PROGRAM ARGS...
#
# One SPLASH-2 test under svmrun. First runs PROBE (a trivial pthreads
# program) with the same configuration; if the runtime cannot run even
# that, the test is skipped (exit 77, ctest SKIP_RETURN_CODE) and says why:
# the runtime's own tests own that failure (SPLASH2_SVM_STRICT=1: fail
# instead). Otherwise runs PROGRAM and passes its exit status through
# (124: svmrun's --timeout).
set -u
svmrun=$1 libsvm=$2 probe=$3 nodes=$4 threads=$5 timeout=$6
shift 6
[ "${1:-}" = "--" ] && shift
procs=$((nodes * threads))
if ! out=$("$svmrun" -n "$nodes" -t "$threads" --timeout 60 --preload "$libsvm" -- "$probe" "$procs" 2>&1); then
  echo "skipped [runtime cannot run the probe on -n $nodes -t $threads]:"
  echo "$out" | tail -5
  [ -n "${SPLASH2_SVM_STRICT:-}" ] && exit 1
  exit 77
fi
echo "+ svmrun -n $nodes -t $threads --timeout $timeout -- $*"
exec "$svmrun" -n "$nodes" -t "$threads" --timeout "$timeout" --preload "$libsvm" -- "$@"
