# Throw-away RabbitMQ and PostgreSQL servers for the test suite: loopback only, own data
# directories under one temporary folder, stopped by the pids this shell started.
# Source it, call start_rabbitmq / start_postgres, and trap stop_servers on EXIT.
# Why it is done this way: docs/setup.md §2 and §3.

# 5672 is the AMQP default, so amqp://guest:guest@127.0.0.1:5672/ reaches the test broker;
# set ACEMQ_TEST_AMQP_PORT / ACEMQ_TEST_AMQPS_PORT when another broker already holds them.
ACEMQ_TEST_AMQP_PORT=${ACEMQ_TEST_AMQP_PORT:-5672}
ACEMQ_TEST_AMQPS_PORT=${ACEMQ_TEST_AMQPS_PORT:-5671}
ACEMQ_TEST_PG_PORT=${ACEMQ_TEST_PG_PORT:-5439}
# The management HTTP API (the rabbitmq_management plugin), 10000 above the AMQP port unless
# set: 15672, RabbitMQ's own default, for the default 5672.
ACEMQ_TEST_AMQP_HTTP_PORT=${ACEMQ_TEST_AMQP_HTTP_PORT:-$((ACEMQ_TEST_AMQP_PORT + 10000))}
servers_dir=$(mktemp -d /tmp/acemq-servers.XXXXXX)
chmod 755 "$servers_dir"
rabbitmq_script_pid='' rabbitmq_epmd_pid='' postgres_data=''

start_rabbitmq() {
  local started=$SECONDS dir=$servers_dir/rabbitmq
  mkdir -p "$dir"/{home,mnesia,log}
  # The node name carries the port: two runs on one machine share epmd, which refuses a
  # second node of the same name.
  export RABBITMQ_NODENAME=acemq-test-$ACEMQ_TEST_AMQP_PORT@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$ACEMQ_TEST_AMQP_PORT RABBITMQ_DIST_PORT=$((ACEMQ_TEST_AMQP_PORT + 20000))
  export ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_CONF_ENV_FILE=/dev/null
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}'
  export RABBITMQ_MNESIA_BASE=$dir/mnesia RABBITMQ_LOG_BASE=$dir/log
  export RABBITMQ_PID_FILE=$dir/beam.pid RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins
  export RABBITMQ_CONFIG_FILE=$dir/rabbitmq
  # The management plugin (amqp::manage asks its HTTP API) ships with rabbitmq-server;
  # enabled by this file, it needs no network and no rabbitmq-plugins call. Measured on the
  # 2-core CI machine, it adds about 0.8 s of CPU to the node's start (7.6 s against 6.8 s,
  # medians of four starts each: its HTTP listener and statistics database), and no wall time
  # that stood out of the start's own spread (12-16 s either way at a load of 5).
  echo "[rabbitmq_management]." > "$RABBITMQ_ENABLED_PLUGINS_FILE"
  make_test_certificates "$servers_dir/tls" || return 1
  # RABBITMQ_NODE_IP_ADDRESS binds only the plain listener; the TLS one and the management
  # API's name their address themselves. max_message_size is 16 MiB (RabbitMQ's default is 128 MiB), so that a test of
  # the broker's 406 for a body past it moves 16 MiB, not 128. verify_peer checks a certificate when the client sends one, and
  # fail_if_no_peer_cert = false still lets clients without one in. The management API's
  # counts are statistics, every 5 s by default; here queues and channels report every
  # 500 ms (collect_statistics_interval) and the plugin collects every second (its shortest
  # sample_retention_policies interval sets that), so that a test waits a second, not five,
  # to see a classic queue's depth.
  cat > "$dir/rabbitmq.conf" <<EOF
loopback_users.guest = true
listeners.ssl.default = 127.0.0.1:$ACEMQ_TEST_AMQPS_PORT
ssl_options.cacertfile = $servers_dir/tls/ca.pem
ssl_options.certfile = $servers_dir/tls/server.pem
ssl_options.keyfile = $servers_dir/tls/server-key.pem
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
ssl_options.versions.1 = tlsv1.3
ssl_options.versions.2 = tlsv1.2
max_message_size = 16777216
management.tcp.ip = 127.0.0.1
management.tcp.port = $ACEMQ_TEST_AMQP_HTTP_PORT
collect_statistics_interval = 500
management.sample_retention_policies.global.minute = 1
management.sample_retention_policies.basic.minute = 1
management.sample_retention_policies.detailed.10 = 1
EOF
  if ! (exec 3<>/dev/tcp/127.0.0.1/4369) 2>/dev/null; then
    epmd -address 127.0.0.1 >/dev/null 2>&1 </dev/null &
    rabbitmq_epmd_pid=$!
  fi
  # The real scripts, not the /usr/sbin wrappers, which switch to the rabbitmq user.
  HOME=$dir/home /usr/lib/rabbitmq/bin/rabbitmq-server >"$dir/log/stdout.log" 2>&1 </dev/null &
  rabbitmq_script_pid=$!
  local tries
  for tries in $(seq 1 600); do
    [ -s "$RABBITMQ_PID_FILE" ] && break
    if ! kill -0 "$rabbitmq_script_pid" 2>/dev/null; then
      echo "RabbitMQ exited while starting:" >&2; cat "$dir/log/stdout.log" >&2; return 1
    fi
    sleep 0.1
  done
  write_rabbitmqctl_wrapper "$servers_dir/rabbitmqctl" "$dir/home"
  timeout 150 "$servers_dir/rabbitmqctl" wait --timeout 120 "$RABBITMQ_PID_FILE" >/dev/null
  timeout 60 "$servers_dir/rabbitmqctl" -q await_startup
  wait_for_management_api || return 1
  export ACEMQ_TEST_AMQP_URL="amqp://guest:guest@127.0.0.1:$ACEMQ_TEST_AMQP_PORT/"
  export ACEMQ_TEST_AMQPS_URL="amqps://127.0.0.1:$ACEMQ_TEST_AMQPS_PORT/"
  export ACEMQ_TEST_AMQP_HTTP_URL="http://127.0.0.1:$ACEMQ_TEST_AMQP_HTTP_PORT"
  export ACEMQ_TEST_TLS_DIR=$servers_dir/tls ACEMQ_TEST_RABBITMQCTL=$servers_dir/rabbitmqctl
  echo "RabbitMQ up on 127.0.0.1:$ACEMQ_TEST_AMQP_PORT, TLS on 127.0.0.1:$ACEMQ_TEST_AMQPS_PORT," \
       "management on http://127.0.0.1:$ACEMQ_TEST_AMQP_HTTP_PORT, after $((SECONDS - started)) s"
}

# Until the management API answers guest's GET /api/overview with 200, for at most 30 s:
# await_startup returns once the plugins have started, but a test must not race the
# listener. Plain bash (/dev/tcp), so the test machine needs no HTTP client; Z3Vlc3Q6Z3Vlc3Q=
# is guest:guest in base64.
wait_for_management_api() {
  local deadline=$((SECONDS + 30)) status=''
  while ((SECONDS < deadline)); do
    status=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" &&
      printf "GET /api/overview HTTP/1.0\r\nAuthorization: Basic Z3Vlc3Q6Z3Vlc3Q=\r\n\r\n" >&3 &&
      head -n 1 <&3' _ "$ACEMQ_TEST_AMQP_HTTP_PORT" 2>/dev/null)
    case $status in "HTTP/1."?" 200"*) return 0 ;; esac
    sleep 0.1
  done
  echo "RabbitMQ's management API did not answer on 127.0.0.1:$ACEMQ_TEST_AMQP_HTTP_PORT within 30 s" \
       "(last status: ${status:-none}); see $servers_dir/rabbitmq/log" >&2
  return 1
}

# Certificates for the TLS listener and the TLS tests, all in one folder (ACEMQ_TEST_TLS_DIR):
#   ca.pem, ca-key.pem              the test CA; it signed the two certificates below
#   server.pem, server-key.pem      the broker's, valid for DNS:localhost and IP:127.0.0.1
#   client.pem, client-key.pem      a client certificate the broker accepts
#   other-ca.pem, other-ca-key.pem  an unrelated CA that signed nothing: "the wrong CA"
# EC P-256 keys take milliseconds to make where RSA 2048 takes ~0.15 s each; two days of
# validity outlive any run. Clients match the host name or address against the subjectAltName
# (not the CN), and the CA flags are spelled out rather than left to openssl.cnf's defaults.
make_test_certificates() {
  local tls=$1 key='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'
  local ca='-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign'
  mkdir -p "$tls"
  # Chained with && rather than set -e: the caller runs this under ||, where bash ignores -e.
  # $key and $ca are word-split on purpose: they hold several options.
  {
    openssl req -x509 -days 2 $key $ca -subj /CN=acemq-test-ca \
      -keyout "$tls/ca-key.pem" -out "$tls/ca.pem" &&
    openssl req -x509 -days 2 $key $ca -subj /CN=acemq-other-ca \
      -keyout "$tls/other-ca-key.pem" -out "$tls/other-ca.pem" &&
    openssl req -new $key -subj /CN=localhost -keyout "$tls/server-key.pem" -out "$tls/server.csr" &&
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca-key.pem" \
      -CAcreateserial -days 2 -out "$tls/server.pem" -extfile <(printf '%s\n' \
        basicConstraints=CA:FALSE extendedKeyUsage=serverAuth subjectAltName=DNS:localhost,IP:127.0.0.1) &&
    openssl req -new $key -subj /CN=acemq-test-client \
      -keyout "$tls/client-key.pem" -out "$tls/client.csr" &&
    openssl x509 -req -in "$tls/client.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca-key.pem" \
      -CAcreateserial -days 2 -out "$tls/client.pem" -extfile <(printf '%s\n' \
        basicConstraints=CA:FALSE extendedKeyUsage=clientAuth)
  } >"$tls/openssl.log" 2>&1 || {
    echo "Making the test certificates failed:" >&2; cat "$tls/openssl.log" >&2; return 1
  }
  rm -f "$tls/openssl.log" "$tls"/*.csr
  # Keys readable by whichever user a test runs as; they protect nothing.
  chmod 755 "$tls" && chmod 644 "$tls"/*.pem
}

# A rabbitmqctl for the test node that a test process can run with no RABBITMQ_* variables
# of its own ($ACEMQ_TEST_RABBITMQCTL stop_app, start_app, set_vm_memory_high_watermark 0):
# the CLI finds the node by its name and proves itself with the cookie in $HOME, and it
# must not read the system's rabbitmq-env.conf, which may name another node.
write_rabbitmqctl_wrapper() {
  cat > "$1" <<EOF
#!/bin/sh
export HOME='$2' RABBITMQ_NODENAME='$RABBITMQ_NODENAME'
export RABBITMQ_CONF_ENV_FILE=/dev/null ERL_EPMD_ADDRESS=127.0.0.1
exec /usr/lib/rabbitmq/bin/rabbitmqctl "\$@"
EOF
  chmod 755 "$1"
}

stop_rabbitmq() {
  [ -n "$rabbitmq_script_pid" ] || return 0
  local beam tries
  beam=$(cat "$RABBITMQ_PID_FILE" 2>/dev/null || true)
  kill -TERM "$rabbitmq_script_pid" 2>/dev/null || true
  for tries in $(seq 1 300); do
    { [ -n "$beam" ] && kill -0 "$beam" 2>/dev/null; } || break
    sleep 0.1
  done
  if [ -n "$beam" ] && kill -0 "$beam" 2>/dev/null; then kill -KILL "$beam" 2>/dev/null || true; fi
  wait "$rabbitmq_script_pid" 2>/dev/null || true
  if [ -n "$rabbitmq_epmd_pid" ]; then
    kill -TERM "$rabbitmq_epmd_pid" 2>/dev/null || true
    wait "$rabbitmq_epmd_pid" 2>/dev/null || true
  fi
  rabbitmq_script_pid=''
}

start_postgres() {
  local started=$SECONDS bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  postgres_data=$servers_dir/postgres
  install -d -o postgres -g postgres "$postgres_data"
  runuser -u postgres -- "$bin/initdb" -D "$postgres_data/data" -A trust -U postgres >/dev/null
  runuser -u postgres -- "$bin/pg_ctl" -D "$postgres_data/data" -l "$postgres_data/log" -w -t 60 \
    -o "-p $ACEMQ_TEST_PG_PORT -k $postgres_data -c listen_addresses=127.0.0.1" start >/dev/null
  export ACEMQ_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$ACEMQ_TEST_PG_PORT/postgres"
  echo "PostgreSQL up on 127.0.0.1:$ACEMQ_TEST_PG_PORT after $((SECONDS - started)) s"
}

stop_postgres() {
  [ -n "$postgres_data" ] || return 0
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  runuser -u postgres -- "$bin/pg_ctl" -D "$postgres_data/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  postgres_data=''
}

stop_servers() {
  stop_rabbitmq
  stop_postgres
  rm -rf "$servers_dir"
}
