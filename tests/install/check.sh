#!/usr/bin/env bash
# Suite `install`: acemq-cpp as a user outside this repository gets it. Installs one build
# into a prefix of its own, then builds consumer.cpp against the installed files only, once
# with pkg-config and a plain g++ line and once with CMake's find_package(acemq), and runs
# both (an in-process publish and consume).
#   check.sh SOURCE_DIR WORK_DIR --from-build BUILD_DIR   stage an existing build (DESTDIR)
#   check.sh SOURCE_DIR WORK_DIR [MESON_OPTION...]        configure and build one first
set -euo pipefail
source_dir=$(realpath "$1")
work=$2
shift 2
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")

if [ "${1:-}" = "--from-build" ]; then
  # What a packager does: install into a staging directory under the configured prefix.
  build_dir=$2
  DESTDIR="$work/stage" meson install -C "$build_dir" --quiet --no-rebuild
  prefix="$work/stage$(meson introspect "$build_dir" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')"
  export PKG_CONFIG_SYSROOT_DIR="$work/stage"
else
  prefix="$work/prefix"
  # buildtype plain and unity chunks: no optimisation to wait for, four files to a compiler; this
  # checks what is installed, not speed (build/ compiles each file on its own).
  meson setup "$work/build" "$source_dir" --prefix="$prefix" -Dtests=disabled -Dprograms=false -Dbuildtype=plain \
    -Dunity=on -Dwerror=true "$@" >"$work/setup.log" || { cat "$work/setup.log"; exit 1; }
  ninja -C "$work/build" >"$work/build.log" || { tail -50 "$work/build.log"; exit 1; }
  meson install -C "$work/build" --quiet
fi
libdir=$(dirname "$(find "$prefix" -name acemq.pc -print -quit)")/..
libdir=$(realpath "$libdir")
include_dir="$prefix/include"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
export LD_LIBRARY_PATH="$libdir"
has() { grep -q "#define ACEMQ_HAS_$1 1" "$include_dir/acemq/config.hpp"; }
fail() { echo "install check: $*" >&2; exit 1; }

# Every public header of the parts built is installed, and nothing else.
expected=$(cd "$source_dir"; {
  ls lib/acemq/*.hpp lib/acemq/detail/*.hpp | sed 's@^lib/@@'
  echo acemq/config.hpp acemq/inproc.hpp | tr ' ' '\n'
  ls stores/acemq/stores/{memory,sql}_*.hpp | sed 's@^stores/@@'
  if has AMQP; then echo acemq/amqp.hpp; fi
  if has ZMQ; then echo acemq/zmq.hpp; fi
  if has SQLITE; then echo acemq/stores/sqlite.hpp; fi
  if has POSTGRES; then echo acemq/stores/postgres.hpp; fi
} | sort)
installed=$(cd "$include_dir"; find acemq -type f | sort)
if [ "$expected" != "$installed" ]; then
  diff <(echo "$expected") <(echo "$installed") >&2 || true
  fail "the installed headers (right) are not the public headers of the source tree (left)"
fi
# Each installed header compiles on its own with the installed flags alone.
cflags=$(pkg-config --cflags acemq)
case "$cflags" in *-W*) fail "acemq.pc hands its users warning flags: $cflags" ;; esac
# One compiler a core: some fifty headers, seconds each.
compiles_alone() {
  echo "#include <$1>" | g++ -std=c++20 -fsyntax-only $cflags -x c++ - ||
    { echo "install check: <$1> does not compile on its own with: $cflags" >&2; return 1; }
}
export -f compiles_alone
export cflags
echo "$installed" | xargs -P "$(nproc)" -n 1 bash -c 'compiles_alone "$0"' ||
  fail "installed headers do not compile on their own (named above)"

modules=acemq
cmake_sqlite=OFF
if has SQLITE; then modules="acemq acemq-sqlite"; cmake_sqlite=ON; fi
# shellcheck disable=SC2046 # pkg-config's output is meant to be split into arguments
g++ -std=c++20 -o "$work/consumer-pkg-config" "$source_dir/tests/install/consumer.cpp" \
  $(pkg-config --cflags --libs $modules)
"$work/consumer-pkg-config" "$work/pkg-config.db" | tee "$work/pkg-config.out"
grep -q "consumed o-1 4250" "$work/pkg-config.out" || fail "the pkg-config build did not consume its message"

cmake -S "$source_dir/tests/install" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DWITH_SQLITE=$cmake_sqlite >"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" >>"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
"$work/cmake/consumer" "$work/cmake.db" | tee "$work/cmake.out"
grep -q "consumed o-1 4250" "$work/cmake.out" || fail "the CMake build did not consume its message"
echo "install check: pkg-config and CMake builds both ran against $prefix"
