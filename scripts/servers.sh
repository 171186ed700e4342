# Throw-away RabbitMQ and PostgreSQL servers for the test suite: loopback only, own data
# directories under one temporary folder, stopped by the pids this shell started.
# Source it, call start_rabbitmq / start_postgres, and trap stop_servers on EXIT.
# Measured recipes: ../shared/spec/debian-setup.md §2, §7, §8.

ACEMQ_TEST_AMQP_PORT=${ACEMQ_TEST_AMQP_PORT:-5673}
ACEMQ_TEST_PG_PORT=${ACEMQ_TEST_PG_PORT:-5439}
servers_dir=$(mktemp -d /tmp/acemq-servers.XXXXXX)
chmod 755 "$servers_dir"
rabbitmq_script_pid='' rabbitmq_epmd_pid='' postgres_data=''

start_rabbitmq() {
  local started=$SECONDS dir=$servers_dir/rabbitmq
  mkdir -p "$dir"/{home,mnesia,log}
  export RABBITMQ_NODENAME=acemq-test@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$ACEMQ_TEST_AMQP_PORT RABBITMQ_DIST_PORT=$((ACEMQ_TEST_AMQP_PORT + 20000))
  export ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_CONF_ENV_FILE=/dev/null
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}'
  export RABBITMQ_MNESIA_BASE=$dir/mnesia RABBITMQ_LOG_BASE=$dir/log
  export RABBITMQ_PID_FILE=$dir/beam.pid RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins
  export RABBITMQ_CONFIG_FILE=$dir/rabbitmq
  echo "[]." > "$RABBITMQ_ENABLED_PLUGINS_FILE"
  printf 'loopback_users.guest = true\n' > "$dir/rabbitmq.conf"
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
  HOME=$dir/home timeout 150 /usr/lib/rabbitmq/bin/rabbitmqctl wait --timeout 120 "$RABBITMQ_PID_FILE" >/dev/null
  HOME=$dir/home timeout 60 /usr/lib/rabbitmq/bin/rabbitmqctl -q await_startup
  export ACEMQ_TEST_AMQP_URL="amqp://guest:guest@127.0.0.1:$ACEMQ_TEST_AMQP_PORT/"
  echo "RabbitMQ up on 127.0.0.1:$ACEMQ_TEST_AMQP_PORT after $((SECONDS - started)) s"
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
