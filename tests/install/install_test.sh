#!/usr/bin/env bash
# install_test.sh install|deb BUILD_DIR
#   install: `cmake --install` into a temporary prefix; a consumer project
#            builds there with find_package(svm) and runs on 2 nodes under
#            the installed svmrun (which must find the installed libsvm.so);
#            a C program builds with pkg-config's svm flags.
#   deb:     `cpack -G DEB`; its Depends are installed Debian packages; its
#            contents, unpacked anywhere, run a 2-node job.
# One line per check, then a summary; exit 1 on any failure.
set -uo pipefail
what=$1
build=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt")
work=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/svm-install.XXXXXX")" && pwd -P)  # svmrun reports canonical paths
trap 'rm -rf "$work"' EXIT
failed=0

check() {  # check NAME COMMAND...
  local name=$1
  shift
  local out
  if out=$("$@" 2>&1); then
    printf '%-55s ok\n' "$name"
  else
    printf '%-55s FAILED\n%s\n' "$name" "$out"
    failed=$((failed + 1))
  fi
}

# job PREFIX PROGRAM: runs PROGRAM on 2 nodes under PREFIX's svmrun and checks
# that node 1 ran a thread and that PREFIX's libsvm.so served it.
job() {
  local out
  out=$("$1/bin/svmrun" -n 2 --timeout 60 -- "$2") || { echo "svmrun failed: $out"; return 1; }
  echo "$out"
  grep -qx "nodes 2: 1" <<<"$out" && grep -q "^libsvm $1/.*/svm/libsvm.so\$" <<<"$out"
}

man_page() {  # man_page PREFIX PROG
  local page=$1/share/man/man1/$2.1 text flag
  text=$(MANWIDTH=200 man --warnings -l "$page" 2>&1) || return 1
  if grep -q "warning" <<<"$text"; then echo "$text" | grep warning; return 1; fi
  for flag in $("$1/bin/$2" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$flag" <<<"$text" || { echo "$2.1 lacks $flag"; return 1; }
  done
}

pc_build() {  # pc_build PREFIX OUT: hello.c built with pkg-config's flags
  local pcdir
  pcdir=$(dirname "$(find "$1" -name svm.pc | head -1)")
  # shellcheck disable=SC2046
  cc -O2 -pthread -o "$2" "$here/consumer/hello.c" \
    $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs svm) -ldl
}

case $what in
install)
  prefix=$work/prefix
  check "cmake --install into $prefix" cmake --install "$build" --prefix "$prefix"
  for f in bin/svmrun bin/svmd bin/svm-plot include/svm/svm.h share/doc/svm/LICENSE; do
    check "installed $f" test -e "$prefix/$f"
  done
  check "installed libsvm.so, svmConfig.cmake, svm.pc" bash -c \
    "find '$prefix' -path '*/svm/libsvm.so' | grep -q . && find '$prefix' -name svmConfig.cmake | grep -q . \
     && find '$prefix' -name svm.pc | grep -q ."
  for prog in svmrun svmd; do
    if command -v man >/dev/null; then
      check "man page $prog.1 renders and lists every option of --help" man_page "$prefix" "$prog"
    else
      printf '%-55s skipped [man-db not installed]\n' "man page $prog.1"
    fi
  done
  check "consumer configures with find_package(svm)" \
    cmake -S "$here/consumer" -B "$work/consumer" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix"
  check "consumer builds" cmake --build "$work/consumer"
  check "consumer runs on 2 nodes under the installed svmrun" job "$prefix" "$work/consumer/hello"
  check "consumer's own test (svm::svmrun) passes" \
    ctest --test-dir "$work/consumer" --output-on-failure
  check "a program builds with pkg-config svm" pc_build "$prefix" "$work/hello-pc"
  check "... and runs on 2 nodes" job "$prefix" "$work/hello-pc"
  ;;
deb)
  check "cpack -G DEB" cpack -G DEB -B "$work/pkg" --config "$build/CPackConfig.cmake"
  deb=$(ls "$work"/pkg/*.deb 2>/dev/null | head -1)
  check "a .deb was written" test -n "$deb"
  depends=$(dpkg-deb -f "$deb" Depends 2>/dev/null)
  echo "Depends: $depends"
  check "Depends lists the shared libraries' packages" grep -q "libspdlog" <<<"$depends"
  for p in $(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/|.*//' | tr -d ' '); do
    check "dependency $p is an installed Debian package" dpkg-query -W "$p"
  done
  check "unpacks" dpkg-deb -x "$deb" "$work/root"
  check "its svm.pc builds a program" pc_build "$work/root/usr" "$work/hello-deb"
  check "its svmrun runs a 2-node job with its libsvm.so" job "$work/root/usr" "$work/hello-deb"
  ;;
*)
  echo "usage: install_test.sh install|deb BUILD_DIR" >&2
  exit 2
  ;;
esac
echo "install_test $what: $failed failed"
[ "$failed" -eq 0 ]
