#!/bin/sh
# svm_case.sh SVMRUN LIBSVM MACHINE_CHECK NODES THREADS TIMEOUT -- PROGRAM ARGS...
#
# One SPLASH-2 test under svmrun. The only skip (exit 77, ctest
# SKIP_RETURN_CODE) is a machine that lacks the kernel feature the fault
# backend needs (MACHINE_CHECK: runtime_cases --machine-check), said up
# front; so is, under SVM_TRANSPORT=ofi, a libfabric provider this machine
# lacks. Anything svm itself gets wrong is a failure: PROGRAM's exit status
# passes through (124: svmrun's --timeout).
set -u
svmrun=$1 libsvm=$2 check=$3 nodes=$4 threads=$5 timeout=$6
shift 6
[ "${1:-}" = "--" ] && shift
"$check" --machine-check "${SVM_FAULT:-uffd}" || exit $?
if [ "${SVM_TRANSPORT:-tcp}" = ofi ]; then "$check" --ofi-check "${SVM_OFI_PROVIDER:-}" || exit $?; fi
echo "+ svmrun -n $nodes -t $threads --timeout $timeout -- $*"
exec "$svmrun" -n "$nodes" -t "$threads" --timeout "$timeout" --preload "$libsvm" -- "$@"
