#!/usr/bin/env bash
# Suite `install`: acemq-cpp as a user outside this repository gets it. Installs one build
# into a prefix of its own, then builds consumer.cpp against the installed files only, once
# with pkg-config and a plain g++ line (linked as `pkg-config --libs` says and as
# `pkg-config --static --libs` says), once so with clang++ (a user's compiler is not always
# ours) and once with CMake's find_package(acemq), and runs them (an in-process publish and
# consume, a struct's field names through the JSON codec, and one through the xml part when
# it is built). The compile lines get our flags alone, never a
# dependency's; a build configured without debug info (`--buildtype=release`, as the README
# says to install) installs libraries and programs without debug sections.
#   check.sh SOURCE_DIR WORK_DIR --from-build BUILD_DIR   stage an existing build (DESTDIR)
#   check.sh SOURCE_DIR WORK_DIR [MESON_OPTION...]        configure and build one first
# Each installed header is compiled on its own; with --headers-alone=config-dependent (anywhere
# after WORK_DIR) only those whose text names acemq/config.hpp or an ACEMQ_HAS_ macro, for a
# second configuration whose other headers another check already compiled.
set -euo pipefail
source_dir=$(realpath "$1")
work=$2
shift 2
headers_alone=all
arguments=()
for argument in "$@"; do
  case "$argument" in
    --headers-alone=all | --headers-alone=config-dependent) headers_alone=${argument#--headers-alone=} ;;
    *) arguments+=("$argument") ;;
  esac
done
set -- "${arguments[@]}"
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")

build_option() {
  meson introspect "$build_dir" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]))' "$1"
}
if [ "${1:-}" = "--from-build" ]; then
  # What a packager does: install into a staging directory under the configured prefix.
  build_dir=$2
  DESTDIR="$work/stage" meson install -C "$build_dir" --quiet --no-rebuild
  prefix="$work/stage$(build_option prefix)"
  export PKG_CONFIG_SYSROOT_DIR="$work/stage"
else
  prefix="$work/prefix"
  build_dir="$work/build"
  # Unity chunks, four files to a compiler: this checks what is installed, not how each file
  # compiles (build/ compiles each file on its own). The caller passes the buildtype. Warnings
  # are not errors, as in a user's build: GCC 12 at -O3 (--buildtype=release) reports false
  # -Wrestrict inside std::string (GCC bug 105329), and build/ and the sanitizer builds make
  # every warning of our code an error already.
  meson setup "$build_dir" "$source_dir" --prefix="$prefix" -Dtests=disabled -Dprograms=false \
    -Dunity=on "$@" >"$work/setup.log" || { cat "$work/setup.log"; exit 1; }
  ninja -C "$build_dir" >"$work/build.log" || { tail -50 "$work/build.log"; exit 1; }
  meson install -C "$build_dir" --quiet
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
  ls lib/acemq/*.hpp lib/acemq/detail/*.hpp | sed 's@^lib/@@' |
    if has ENCRYPTION; then cat; else grep -vx acemq/encrypted_codec.hpp; fi |
    if has YAML; then cat; else grep -vx acemq/yaml_codec.hpp; fi |
    if has TOML; then cat; else grep -vx acemq/toml_codec.hpp; fi |
    if has XML; then cat; else grep -vx acemq/xml_codec.hpp; fi |
    if has PROTOBUF; then cat; else grep -vx acemq/protobuf_codec.hpp; fi
  echo acemq/config.hpp acemq/inproc.hpp acemq/session.hpp | tr ' ' '\n'
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

modules=acemq
cmake_sqlite=OFF
if has SQLITE; then modules="$modules acemq-sqlite"; cmake_sqlite=ON; fi
if has POSTGRES; then modules="$modules acemq-postgres"; fi
cmake_yaml=OFF cmake_toml=OFF cmake_xml=OFF
if has YAML; then modules="$modules acemq-yaml"; cmake_yaml=ON; fi
if has TOML; then modules="$modules acemq-toml"; cmake_toml=ON; fi
if has XML; then modules="$modules acemq-xml"; cmake_xml=ON; fi

# A user's compile line gets our include directory and what our installed headers need:
# Boost's (PFR: its include directory, and -DBOOST_ALL_NO_LIB, which meson writes for any
# Boost) and -pthread. Never a dependency's flags (cpp-httplib's -DCPPHTTPLIB_*, libpq's
# -I/usr/include/postgresql, libzmq's -I/usr/include/pgm-5.3, a warning flag): none of their
# headers is included by ours.
only_our_flags() { # WHERE FLAG...
  local where=$1 flag
  shift
  for flag in "$@"; do
    case "$flag" in
      "-I$include_dir" | -DBOOST_ALL_NO_LIB | -pthread) ;;
      # pkg-config puts its sysroot (a staged install's) before every directory.
      -I*) [ -e "${flag#-I"${PKG_CONFIG_SYSROOT_DIR:-}"}/boost/pfr.hpp" ] ||
        fail "$where hands its users an include directory that is not ours: $flag (all: $*)" ;;
      *) fail "$where hands its users a flag that is not ours: $flag (all: $*)" ;;
    esac
  done
}
for module in $modules; do
  # shellcheck disable=SC2046 # pkg-config's output is meant to be split into arguments
  only_our_flags "$module.pc (pkg-config --cflags $module)" $(pkg-config --cflags "$module")
done

# Each installed header compiles on its own with the installed flags alone (g++), and all of
# them together under clang++ with a user's warnings on (a user's compiler is not always ours).
# What a header needs from others is the same under both compilers (both read libstdc++), so
# the one-by-one compiles are g++'s alone: under clang++ as well they were half of this check's
# CPU time (84 headers, ~1.3 s each).
cflags=$(pkg-config --cflags acemq)
# One compiler a core: some fifty headers, seconds each.
compiles_alone() {
  echo "#include <$1>" | g++ -std=c++20 -fsyntax-only $cflags -x c++ - ||
    { echo "install check: <$1> does not compile on its own with g++ $cflags" >&2; return 1; }
}
export -f compiles_alone
export cflags
alone=$installed
if [ "$headers_alone" = config-dependent ]; then
  # shellcheck disable=SC2086 # the list is one header a line, without spaces
  alone=$(cd "$include_dir" && { grep -l -e 'acemq/config\.hpp' -e 'ACEMQ_HAS_' $installed; echo acemq/config.hpp; } | sort -u)
fi
echo "$alone" | xargs -P "$(nproc)" -n 1 bash -c 'compiles_alone "$0"' ||
  fail "installed headers do not compile on their own (named above)"
# shellcheck disable=SC2086 # $cflags is meant to be split into arguments
sed 's/.*/#include <&>/' <<<"$alone" | clang++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only $cflags -x c++ - ||
  fail "installed headers do not compile together with clang++ -Wall -Wextra -Werror $cflags"

# What every build of consumer.cpp must print: the message consumed, a struct's field
# names read from the compiler (detail/reflect.hpp), through the JSON codec and back, and a
# struct read back through claim check and, in a build with the encryption part only, through
# encryption.
ran_as_a_user() { # OUTPUT WHICH
  grep -q "consumed o-1 4250" "$1" || fail "the $2 build did not consume its message"
  grep -qF 'reflected {"orderId":"o-2","totalCents":99} {"order_id":"o-2","total_cents":99}' "$1" ||
    fail "the $2 build did not name a struct's fields in JSON as declared"
  grep -qx "claim-checked o-3" "$1" || fail "the $2 build did not read a struct back through claim check"
  if has ENCRYPTION; then
    grep -qx "encrypted o-4" "$1" || fail "the $2 build did not read a struct back through encryption"
  elif grep -q "^encrypted" "$1"; then
    fail "the $2 build encrypted, though its config.hpp says it has no encryption part"
  fi
  if has XML; then
    grep -qF 'xml <OrderPlaced><orderId>o-3</orderId><totalCents>7</totalCents></OrderPlaced>' "$1" ||
      fail "the $2 build did not write XML through the xml part"
  fi
  if has YAML; then grep -qx "yaml orderId: o-2" "$1" || fail "the $2 build did not write YAML through acemq-yaml"; fi
  if has TOML; then grep -qx "toml orderId = 'o-2'" "$1" || fail "the $2 build did not write TOML through acemq-toml"; fi
}

# One object, linked as `pkg-config --libs` says (which must do for a static libacemq too)
# and as `pkg-config --static --libs` says; and one compiled by clang++, with warnings on
# (a user's -Wall must not find ours), linked by clang++ as `pkg-config --libs` says.
# shellcheck disable=SC2046 # pkg-config's output is meant to be split into arguments
g++ -std=c++20 -c -o "$work/consumer.o" "$source_dir/tests/install/consumer.cpp" $(pkg-config --cflags $modules)
# shellcheck disable=SC2046 # pkg-config's output is meant to be split into arguments
clang++ -std=c++20 -Wall -Wextra -Werror -c -o "$work/consumer-clang.o" "$source_dir/tests/install/consumer.cpp" \
  $(pkg-config --cflags $modules) || fail "consumer.cpp does not compile with clang++"
for link in plain static clang; do
  static=
  if [ $link = static ]; then static=--static; fi
  object=consumer.o linker=g++
  if [ $link = clang ]; then object=consumer-clang.o linker=clang++; fi
  # shellcheck disable=SC2046,SC2086 # pkg-config's output and $static are meant to be split
  $linker -o "$work/consumer-$link" "$work/$object" $(pkg-config $static --libs $modules) ||
    fail "$object does not link with: pkg-config $static --libs $modules"
  "$work/consumer-$link" "$work/$link.db" | tee "$work/$link.out"
  ran_as_a_user "$work/$link.out" "pkg-config ($link)"
done

cmake -S "$source_dir/tests/install" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DWITH_SQLITE=$cmake_sqlite -DWITH_YAML=$cmake_yaml -DWITH_TOML=$cmake_toml -DWITH_XML=$cmake_xml >"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" >>"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
# The include directories and definitions on consumer.cpp's compile line (-isystem DIR as -IDIR).
cmake_flags=$(python3 -c '
import json, shlex, sys
words = shlex.split(json.load(open(sys.argv[1]))[0]["command"])
for word, following in zip(words, words[1:] + [""]):
    if word in ("-I", "-isystem"):
        print("-I" + following)
    elif word == "-D":
        print("-D" + following)
    elif word.startswith(("-I", "-D", "-pthread")):
        print(word)
' "$work/cmake/compile_commands.json")
# shellcheck disable=SC2086 # one flag a line
only_our_flags "CMake's acemq::acemq" $cmake_flags
"$work/cmake/consumer" "$work/cmake.db" | tee "$work/cmake.out"
ran_as_a_user "$work/cmake.out" CMake

# The protobuf part: a program with a .proto of its own, compiled by the user's protoc, built
# with acemq-protobuf.pc (g++) and with CMake's component `protobuf`, and run. A build without
# the part installs no trace of it: no file named for it, no protobuf in any .pc, and CMake
# refuses the component, saying so.
proto_dir="$source_dir/tests/protobuf"
protobuf_project="$source_dir/tests/install/protobuf"
ran_protobuf() { # OUTPUT WHICH
  grep -qx "protobuf body 0a036f2d31109a211a0461636d65" "$1" ||
    fail "the $2 build did not write the family's protobuf sample"
  grep -qx "consumed protobuf o-1 4250 acme as application/x-protobuf" "$1" ||
    fail "the $2 build did not consume its protobuf message"
}
if has PROTOBUF; then
  mkdir -p "$work/protobuf"
  protoc --proto_path="$proto_dir" --cpp_out="$work/protobuf" "$proto_dir/order_placed.proto"
  # shellcheck disable=SC2046 # pkg-config's output is meant to be split into arguments
  g++ -std=c++20 -o "$work/protobuf/consumer" -I"$work/protobuf" "$protobuf_project/protobuf_consumer.cpp" \
    "$work/protobuf/order_placed.pb.cc" $(pkg-config --cflags --libs acemq-protobuf) ||
    fail "a program with a generated message does not build with: pkg-config --cflags --libs acemq-protobuf"
  "$work/protobuf/consumer" | tee "$work/protobuf.out"
  ran_protobuf "$work/protobuf.out" "pkg-config (acemq-protobuf)"
  cmake -S "$protobuf_project" -B "$work/cmake-protobuf" -DCMAKE_PREFIX_PATH="$prefix" \
    -DPROTO_FILE="$proto_dir/order_placed.proto" -DPROTO_DIR="$proto_dir" >"$work/cmake-protobuf.log" ||
    { cat "$work/cmake-protobuf.log"; exit 1; }
  cmake --build "$work/cmake-protobuf" >>"$work/cmake-protobuf.log" || { cat "$work/cmake-protobuf.log"; exit 1; }
  "$work/cmake-protobuf/protobuf_consumer" | tee "$work/cmake-protobuf.out"
  ran_protobuf "$work/cmake-protobuf.out" "CMake (acemq::protobuf)"
else
  traces=$(find "$prefix" -iname '*protobuf*')
  [ -z "$traces" ] || fail "a build without the protobuf part installed $traces"
  ! grep -ril protobuf "$libdir/pkgconfig" || fail "a build without the protobuf part names protobuf in a .pc (above)"
  if cmake -S "$protobuf_project" -B "$work/cmake-protobuf" -DCMAKE_PREFIX_PATH="$prefix" \
    -DPROTO_FILE="$proto_dir/order_placed.proto" -DPROTO_DIR="$proto_dir" >"$work/cmake-protobuf.log" 2>&1; then
    fail "CMake found the component protobuf in a build without it"
  fi
  # CMake wraps the message's lines: read it as one.
  tr -s ' \n' '  ' <"$work/cmake-protobuf.log" | grep -q "acemq was built without its protobuf part" ||
    { cat "$work/cmake-protobuf.log"; fail "CMake refused the component protobuf without saying why"; }
fi

# Configured without debug info, as the README says to install: nothing installed carries
# it, and so neither does a program linked with it (the README's table: 55 MB for a small
# program on a static libacemq built with -g).
if [ "$(build_option debug)" = False ]; then
  for file in $(find "$prefix" -type f \( -name 'lib*.a' -o -name 'lib*.so*' -o -path '*/bin/*' \)) \
    "$work/consumer-static" "$work/cmake/consumer"; do
    if readelf -S --wide "$file" | grep -q ' \.debug_'; then
      fail "$file carries debug sections, though its build was configured without debug info"
    fi
  done
fi
echo "install check: pkg-config (g++ and clang++) and CMake builds ran against $prefix with our compile flags alone" \
  "(protobuf part: $(has PROTOBUF && echo built and run || echo absent, no trace of it))"
