#!/usr/bin/env bash
# One compat run: floe + KRaft broker + Kafka Connect (distributed) + the Iceberg sink configured as in
# the source document; N JSON events to a 3-partition topic must land as exactly N rows (PyIceberg).
#
# Env: N (1000)  ICEBERG_VERSION (1.10.1)  KAFKA_VERSION (3.9.2)
#      CHECKSUM (default|when_required) - when_required adds -Daws.requestChecksumCalculation=when_required
#                                         -Daws.responseChecksumValidation=when_required to the Connect JVM
#      SCENARIO (plain|kill-connect|kill-floe): SIGKILL that process once mid-stream (after the first
#               commit, while the rate-limited producer runs: RATE_EPS, default N/40 per s) and restart it
#               auto-evolve: no namespace/table made beforehand; the connector runs with
#               iceberg.tables.auto-create-enabled + evolve-schema-enabled, events N/2.. add a column
#               oss: floe serve --location-scheme oss --s3-domain oss.floe.test (oss:// tables,
#               virtual-hosted buckets); the sink writes with Iceberg's OSSFileIO (plugin
#               iceberg-$ICEBERG_VERSION-oss: + iceberg-aliyun, aliyun-sdk-oss; OSS V1 signatures)
#               and the catalog's oss.endpoint; the Connect JVM resolves {warehouse}.oss.floe.test
#               to 127.0.0.1 through -Djdk.net.hosts.file
#               iam: the connector signs (catalog and S3FileIO) as IAM user kafka-sink, made with the AWS
#               CLI and allowed only GetTableBucket, GetTable, GetTableMetadataLocation, GetTableData,
#               UpdateTableMetadataLocation, PutTableData on the bucket and its tables; no denial allowed
#               iam-role: the same actions granted to role kafka-sink-role only; user kafka-sink may do
#               nothing but sts:AssumeRole on it (trust policy naming the user); the connector signs with
#               the session's temporary credentials (rest.session-token, s3.session-token)
#               cluster: floe is 3 nodes on a test PostgreSQL and a shared S3 store behind HAProxy
#               (tests/compat/cluster.py), each request to the next node in turn
#      COMMIT_INTERVAL_MS (10000)  TASKS_MAX (2)  WAIT_SECS (300)  KEEP=1 keeps the run dir
#      FLOE_BIN (build/floe)
# Logs: tests/compat/.cache/runs/<run>/{floe,kafka,connect}.log
set -euo pipefail
{ # the whole script is parsed before it runs, so editing it does not break a running instance
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${COMPAT_CACHE:-$HERE/.cache}"
N="${N:-1000}"
ICEBERG_VERSION="${ICEBERG_VERSION:-1.10.1}"
KAFKA_VERSION="${KAFKA_VERSION:-3.9.2}"
CHECKSUM="${CHECKSUM:-default}"
COMMIT_INTERVAL_MS="${COMMIT_INTERVAL_MS:-10000}"
TASKS_MAX="${TASKS_MAX:-2}"
WAIT_SECS="${WAIT_SECS:-600}"
SCENARIO="${SCENARIO:-plain}"   # plain | kill-connect | kill-floe | auto-evolve | oss | iam | iam-role | cluster
OSS_DOMAIN=oss.floe.test
if [ "$SCENARIO" = auto-evolve ]; then export COMPAT_EVOLVE_FROM=$(( N / 2 )); fi
FLOE_BIN="${FLOE_BIN:-$REPO/build/floe}"
PY="$REPO/.venv/bin/python"
AWS="$REPO/.venv/bin/aws"
REGION=us-east-1
export FLOE_ROOT_ACCESS_KEY_ID="${FLOE_ROOT_ACCESS_KEY_ID:-FLOECOMPATKEY0000001}"
export FLOE_ROOT_SECRET_ACCESS_KEY="${FLOE_ROOT_SECRET_ACCESS_KEY:-floeCompatSecret/0123456789abcdefghijkl}"
export COMPAT_REGION=$REGION

if [ "$SCENARIO" = oss ]; then
  ICEBERG_VERSIONS="$ICEBERG_VERSION" KAFKA_VERSION="$KAFKA_VERSION" bash "$HERE/fetch.sh" kafka sink-oss >/dev/null
  PLUGINS="$CACHE/plugins/iceberg-$ICEBERG_VERSION-oss"
else
  ICEBERG_VERSIONS="$ICEBERG_VERSION" KAFKA_VERSION="$KAFKA_VERSION" bash "$HERE/fetch.sh" >/dev/null
  PLUGINS="$CACHE/plugins/iceberg-$ICEBERG_VERSION"
fi
KLIB="$CACHE/kafka-$KAFKA_VERSION/lib"
"$PY" -c 'import confluent_kafka' 2>/dev/null || "$REPO/.venv/bin/pip" install -q confluent-kafka

RUN="$CACHE/runs/$(date +%Y%m%d-%H%M%S)-iceberg$ICEBERG_VERSION-$CHECKSUM-$SCENARIO"
mkdir -p "$RUN"
T0=$(date +%s)
log() { printf '[%4ds] %s\n' $(( $(date +%s) - T0 )) "$*"; }
free_port() { "$PY" "$HERE/../free_port.py"; }
S3P=$(free_port); CATP=$(free_port); BP=$(free_port); CP=$(free_port); RP=$(free_port)
S3=http://127.0.0.1:$S3P; CAT=http://127.0.0.1:$CATP; REST=http://127.0.0.1:$RP
BOOT=127.0.0.1:$BP
NS=compat_ns; TABLE=events; TOPIC=events

PIDS=()          # everything started here, by pid (killed ones are skipped)
FLOE_PID=; KAFKA_PID=; CONNECT_PID=; PROD_PID=
stop_pid() { # pid secs: SIGTERM, wait up to secs, then SIGKILL
  local p=$1 i
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 0
  kill "$p" 2>/dev/null || true
  for ((i=0; i<$2*10; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  # producer and Connect first, then the broker, then floe
  stop_pid "$PROD_PID" 5; stop_pid "$CONNECT_PID" 20; stop_pid "$KAFKA_PID" 20; stop_pid "$FLOE_PID" "$FLOE_STOP_SECS"
  for p in "${PIDS[@]}"; do stop_pid "$p" 2; done
  log "stopped; logs in $RUN (rc=$rc)"
  [ "${KEEP:-1}" = 1 ] || rm -rf "$RUN"
}
trap cleanup EXIT
die() { log "FAIL: $*"; summary; exit 1; }
summary() {
  log "floe requests with status >= 400 (last 20):"
  grep -E ' (4[0-9][0-9]|5[0-9][0-9]) ' "$RUN/floe.log" | tail -20 || true
  log "Connect ERROR/Exception lines (first 20):"
  grep -nE 'ERROR|Exception' "$RUN/connect.log" | head -20 || true
}
wait_for() { # secs description command...
  local secs=$1 what=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || die "timeout after ${secs}s waiting for $what"
    sleep 0.5
  done
}

# ---- floe ---------------------------------------------------------------------
FLOE_ARGS=()
[ "$SCENARIO" != oss ] || FLOE_ARGS=(--location-scheme oss --s3-domain $OSS_DOMAIN)
FLOE_STOP_SECS=10
[ "$SCENARIO" != cluster ] || FLOE_STOP_SECS=60   # three nodes, HAProxy, the store and PostgreSQL
start_floe() {
  if [ "$SCENARIO" = cluster ]; then
    : >>"$RUN/floe.log"
    FLOE_BIN="$FLOE_BIN" "$REPO/.venv/bin/python" "$HERE/cluster.py" "$RUN" $S3P $CATP >>"$RUN/cluster.log" 2>&1 &
    FLOE_PID=$!; PIDS+=($FLOE_PID)
    wait_for 90 "floe cluster /health" curl -sf "$S3/health"
    log "floe cluster up (haproxy: s3 $S3, catalog $CAT; pid $FLOE_PID; nodes' logs go to floe.log at the end)"
    return
  fi
  "$FLOE_BIN" serve --data-dir "$RUN/floe-data" --s3-listen 127.0.0.1:$S3P \
      --catalog-listen 127.0.0.1:$CATP --region $REGION "${FLOE_ARGS[@]}" >>"$RUN/floe.log" 2>&1 &
  FLOE_PID=$!; PIDS+=($FLOE_PID)
  wait_for 20 "floe /health" curl -sf "$S3/health"
  log "floe up (s3 $S3, catalog $CAT, pid $FLOE_PID)"
}
start_floe

# ---- Kafka broker (KRaft, single node) ----------------------------------------
cat > "$RUN/log4j.properties" <<P
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.org.apache.kafka.common.utils.AppInfoParser=WARN
log4j.logger.org.apache.kafka.clients.consumer.internals.ConsumerCoordinator=INFO
log4j.logger.org.reflections=ERROR
log4j.logger.kafka.log=WARN
log4j.logger.org.apache.iceberg=INFO
P
cat > "$RUN/server.properties" <<P
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CP
listeners=PLAINTEXT://127.0.0.1:$BP,CONTROLLER://127.0.0.1:$CP
advertised.listeners=PLAINTEXT://127.0.0.1:$BP
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$RUN/kafka-logs
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
P
JAVA_COMMON=(-Dlog4j.configuration="file:$RUN/log4j.properties" -Djava.awt.headless=true)
CLUSTER_ID=$(java -cp "$KLIB/*" "${JAVA_COMMON[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
java -cp "$KLIB/*" "${JAVA_COMMON[@]}" kafka.tools.StorageTool format -t "$CLUSTER_ID" \
    -c "$RUN/server.properties" >"$RUN/kafka-format.log" 2>&1 || { cat "$RUN/kafka-format.log"; die "kafka-storage format"; }
java -Xms256m -Xmx768m -cp "$KLIB/*" "${JAVA_COMMON[@]}" kafka.Kafka "$RUN/server.properties" >"$RUN/kafka.log" 2>&1 &
KAFKA_PID=$!; PIDS+=($KAFKA_PID)
kafka_ready() { "$PY" - "$BOOT" <<'PYEOF'
import sys
from confluent_kafka.admin import AdminClient
md = AdminClient({"bootstrap.servers": sys.argv[1]}).list_topics(timeout=2)
sys.exit(0 if md.brokers else 1)
PYEOF
}
wait_for 60 "kafka broker $BOOT" kafka_ready
"$PY" - "$BOOT" "$TOPIC" <<'PYEOF'
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in a.create_topics([NewTopic(sys.argv[2], 3, 1), NewTopic("control-iceberg", 1, 1)]).values():
    f.result(30)
PYEOF
log "kafka up ($BOOT, cluster $CLUSTER_ID); topics $TOPIC(3 partitions), control-iceberg(1)"

# ---- Kafka Connect worker (distributed) ---------------------------------------
cat > "$RUN/connect-distributed.properties" <<P
bootstrap.servers=$BOOT
group.id=compat-connect
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
value.converter.schemas.enable=false
config.storage.topic=compat-connect-configs
offset.storage.topic=compat-connect-offsets
status.storage.topic=compat-connect-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
offset.storage.partitions=3
status.storage.replication.factor=1
status.storage.partitions=3
offset.flush.interval.ms=5000
listeners=http://127.0.0.1:$RP
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$RP
plugin.path=$PLUGINS
plugin.discovery=hybrid_warn
P
CONNECT_JVM=(-Xms256m -Xmx1500m)
if [ "$SCENARIO" = oss ]; then # the warehouse's host is added once the table exists (read at each lookup)
  printf '127.0.0.1 localhost\n' > "$RUN/hosts"
  CONNECT_JVM+=(-Djdk.net.hosts.file="$RUN/hosts")
fi
if [ "$CHECKSUM" = when_required ]; then
  CONNECT_JVM+=(-Daws.requestChecksumCalculation=when_required -Daws.responseChecksumValidation=when_required)
fi
start_connect() {
  java "${CONNECT_JVM[@]}" "${JAVA_COMMON[@]}" -cp "$KLIB/*" org.apache.kafka.connect.cli.ConnectDistributed \
      "$RUN/connect-distributed.properties" >>"$RUN/connect.log" 2>&1 &
  CONNECT_PID=$!; PIDS+=($CONNECT_PID)
  wait_for 120 "Connect REST $REST" curl -sf "$REST/connectors"
  log "connect up ($REST, pid $CONNECT_PID, jvm ${CONNECT_JVM[*]})"
}
start_connect
curl -sf "$REST/connector-plugins" | grep -q org.apache.iceberg.connect.IcebergSinkConnector \
  || die "IcebergSinkConnector not among $(curl -s "$REST/connector-plugins")"

# ---- table bucket, namespace, table with the AWS CLI (as in the source document) --------------
export AWS_ACCESS_KEY_ID=$FLOE_ROOT_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$FLOE_ROOT_SECRET_ACCESS_KEY
export AWS_DEFAULT_REGION=$REGION AWS_EC2_METADATA_DISABLED=true AWS_PAGER=""
aws_t() { "$AWS" s3tables --endpoint-url "$CAT" --region $REGION "$@"; }
ARN=$(aws_t create-table-bucket --name compat-bucket --query arn --output text) || die "create-table-bucket"
if [ "$SCENARIO" = auto-evolve ]; then
  log "table bucket $ARN created with the AWS CLI; namespace and table left to the connector (auto-create)"
else
aws_t create-namespace --table-bucket-arn "$ARN" --namespace $NS >"$RUN/aws-ns.json" || die "create-namespace"
cat > "$RUN/create-table.json" <<J
{
  "tableBucketARN": "$ARN",
  "namespace": "$NS",
  "name": "$TABLE",
  "format": "ICEBERG",
  "metadata": {
    "iceberg": {
      "schema": {
        "fields": [
          {"name": "event_id", "type": "string", "required": true},
          {"name": "event_time", "type": "string"},
          {"name": "event_type", "type": "string"}
        ]
      }
    }
  }
}
J
aws_t create-table --cli-input-json "file://$RUN/create-table.json" >"$RUN/aws-table.json" || die "create-table"
log "table bucket $ARN, table $NS.$TABLE created with the AWS CLI"
if [ "$SCENARIO" = oss ]; then
  WH=$(aws_t get-table --table-bucket-arn "$ARN" --namespace $NS --name $TABLE --query warehouseLocation --output text)
  [[ "$WH" == oss://* ]] || die "warehouse location $WH is not oss://"
  printf '127.0.0.1 %s.%s\n' "${WH#oss://}" "$OSS_DOMAIN" >> "$RUN/hosts"
  log "warehouse $WH, served as http://${WH#oss://}.$OSS_DOMAIN:$S3P"
fi

fi

# ---- iam: the connector signs as an IAM user allowed only what the sink does ------------------
SINK_AK=$FLOE_ROOT_ACCESS_KEY_ID SINK_SK=$FLOE_ROOT_SECRET_ACCESS_KEY SINK_TOKEN=""
if [ "$SCENARIO" = iam ] || [ "$SCENARIO" = iam-role ]; then
  aws_i() { "$AWS" iam --endpoint-url "$CAT" --region $REGION "$@"; }
  # getConfig; tableExists (HEAD); loadTable; updateTable; data and metadata files through S3FileIO
  cat > "$RUN/sink-policy.json" <<J
{"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
  "Action": ["s3tables:GetTableBucket", "s3tables:GetTable", "s3tables:GetTableMetadataLocation", "s3tables:GetTableData",
             "s3tables:UpdateTableMetadataLocation", "s3tables:PutTableData"],
  "Resource": ["$ARN", "$ARN/table/*"]}]}
J
  aws_i create-user --user-name kafka-sink >/dev/null || die "iam create-user"
  read -r SINK_AK SINK_SK < <(aws_i create-access-key --user-name kafka-sink \
      --query 'AccessKey.[AccessKeyId,SecretAccessKey]' --output text) || die "iam create-access-key"
  if [ "$SCENARIO" = iam ]; then
    aws_i put-user-policy --user-name kafka-sink --policy-name sink \
        --policy-document "file://$RUN/sink-policy.json" || die "iam put-user-policy"
    log "IAM user kafka-sink ($SINK_AK) with $(tr -d '\n' < "$RUN/sink-policy.json" | grep -o 's3tables:[A-Za-z]*' | tr '\n' ' ')"
  else
    USER_ARN=$(aws_i get-user --user-name kafka-sink --query User.Arn --output text) || die "iam get-user"
    ROLE_ARN=${USER_ARN%:user/*}:role/kafka-sink-role
    printf '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "%s"}, "Action": "sts:AssumeRole"}]}\n' \
        "$USER_ARN" > "$RUN/trust.json"
    printf '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "%s"}]}\n' \
        "$ROLE_ARN" > "$RUN/assume.json"
    aws_i create-role --role-name kafka-sink-role --assume-role-policy-document "file://$RUN/trust.json" >/dev/null \
        || die "iam create-role"
    aws_i put-role-policy --role-name kafka-sink-role --policy-name sink \
        --policy-document "file://$RUN/sink-policy.json" || die "iam put-role-policy"
    aws_i put-user-policy --user-name kafka-sink --policy-name assume \
        --policy-document "file://$RUN/assume.json" || die "iam put-user-policy"
    # the user itself may do nothing but assume the role
    ! AWS_ACCESS_KEY_ID=$SINK_AK AWS_SECRET_ACCESS_KEY=$SINK_SK "$AWS" s3tables --endpoint-url "$CAT" --region $REGION \
        get-table-bucket --table-bucket-arn "$ARN" >/dev/null 2>&1 || die "kafka-sink's own key reads the bucket"
    read -r SINK_AK SINK_SK SINK_TOKEN < <(AWS_ACCESS_KEY_ID=$SINK_AK AWS_SECRET_ACCESS_KEY=$SINK_SK \
        "$AWS" sts --endpoint-url "$CAT" --region $REGION assume-role --role-arn "$ROLE_ARN" \
        --role-session-name connect --duration-seconds 3600 \
        --query 'Credentials.[AccessKeyId,SecretAccessKey,SessionToken]' --output text) || die "sts assume-role"
    [ -n "$SINK_TOKEN" ] || die "sts assume-role: no session token"
    log "role kafka-sink-role with $(tr -d '\n' < "$RUN/sink-policy.json" | grep -o 's3tables:[A-Za-z]*' | tr '\n' ' '), assumed by user kafka-sink: session key $SINK_AK"
  fi
fi
TOKEN_PROPS=""
if [ -n "$SINK_TOKEN" ]; then
  TOKEN_PROPS='  "iceberg.catalog.rest.session-token": "'$SINK_TOKEN'",
  "iceberg.catalog.s3.session-token": "'$SINK_TOKEN'",'
fi

# ---- connector -----------------------------------------------------------------
EXTRA_CONNECTOR_PROPS=""
if [ "$SCENARIO" = auto-evolve ]; then
  EXTRA_CONNECTOR_PROPS=',
  "iceberg.tables.auto-create-enabled": "true",
  "iceberg.tables.evolve-schema-enabled": "true"'
fi
IO_PROPS='  "iceberg.catalog.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
  "iceberg.catalog.s3.endpoint": "'$S3'",
  "iceberg.catalog.s3.access-key-id": "'$SINK_AK'",
  "iceberg.catalog.s3.secret-access-key": "'$SINK_SK'",
  "iceberg.catalog.s3.path-style-access": "true",'
if [ "$SCENARIO" = oss ]; then # OSSFileIO; oss.endpoint comes from the catalog's table config
  IO_PROPS='  "iceberg.catalog.io-impl": "org.apache.iceberg.aliyun.oss.OSSFileIO",
  "iceberg.catalog.client.access-key-id": "'$FLOE_ROOT_ACCESS_KEY_ID'",
  "iceberg.catalog.client.access-key-secret": "'$FLOE_ROOT_SECRET_ACCESS_KEY'",'
fi
cat > "$RUN/connector.json" <<J
{"name": "iceberg-sink", "config": {
  "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
  "tasks.max": "$TASKS_MAX",
  "topics": "$TOPIC",
  "iceberg.tables": "$NS.$TABLE",
  "iceberg.control.commit.interval-ms": "$COMMIT_INTERVAL_MS",
  "iceberg.catalog.type": "rest",
  "iceberg.catalog.uri": "$CAT/iceberg",
  "iceberg.catalog.rest.sigv4-enabled": "true",
  "iceberg.catalog.rest.signing-region": "$REGION",
  "iceberg.catalog.warehouse": "$ARN",
  "iceberg.catalog.rest.signing-name": "osstables",
  "iceberg.catalog.rest.access-key-id": "$SINK_AK",
  "iceberg.catalog.rest.secret-access-key": "$SINK_SK",
$TOKEN_PROPS
$IO_PROPS
  "iceberg.catalog.client.region": "$REGION",
  "key.converter": "org.apache.kafka.connect.json.JsonConverter",
  "key.converter.schemas.enable": "false",
  "value.converter": "org.apache.kafka.connect.json.JsonConverter",
  "value.converter.schemas.enable": "false"$EXTRA_CONNECTOR_PROPS
}}
J
AUDIT_FROM=$(( $(wc -l < "$RUN/floe.log") + 1 )) # the connector's requests are audited from here on
curl -sf -X POST -H 'Content-Type: application/json' --data @"$RUN/connector.json" "$REST/connectors" >"$RUN/connector-created.json" \
  || die "POST /connectors: $(curl -s -X POST -H 'Content-Type: application/json' --data @"$RUN/connector.json" "$REST/connectors")"
connector_running() {
  curl -sf "$REST/connectors/iceberg-sink/status" >"$RUN/status.json" || return 1
  "$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); t=s["tasks"]; sys.exit(0 if s["connector"]["state"]=="RUNNING" and t and all(x["state"]=="RUNNING" for x in t) else 1)' "$RUN/status.json"
}
wait_for 60 "connector and tasks RUNNING" connector_running
log "connector iceberg-sink RUNNING with $TASKS_MAX tasks (Iceberg $ICEBERG_VERSION)"

# ---- produce (in the background, rate-limited when a process is killed mid-stream) and wait ------
connector_status() { curl -sf "$REST/connectors/iceberg-sink/status" 2>/dev/null || echo '{}'; }
failed_traces() {
  "$PY" -c 'import json,sys; s=json.loads(sys.stdin.read() or "{}"); [print(t.get("id","connector"), t.get("trace","")[:2500]) for t in s.get("tasks",[])+[s.get("connector",{})] if t.get("state")=="FAILED"]'
}
table_rows() { (cd "$HERE" && "$PY" check.py count "$CAT/iceberg" "$S3" "$ARN" "$NS" "$TABLE" 2>>"$RUN/check.log") || echo "?"; }
RATE=0
[ "$SCENARIO" = plain ] || [ "$SCENARIO" = auto-evolve ] || [ "$SCENARIO" = oss ] || RATE="${RATE_EPS:-$(( N / 40 > 500 ? N / 40 : 500 ))}"
[ "${DEMO:-0}" != 1 ] || RATE="${RATE_EPS:-1000}"   # the demo streams at a steady rate
(cd "$HERE" && exec "$PY" events.py produce "$BOOT" "$TOPIC" "$N" 0 "$RATE") >"$RUN/produce.log" 2>&1 &
PROD_PID=$!; PIDS+=($PROD_PID)
log "producing $N events (rate ${RATE:-unlimited}/s, scenario $SCENARIO)"
KILLED=0; RESTARTS=0
count=0; end=$(( $(date +%s) + WAIT_SECS )); last=-1; reached=0
while :; do
  count=$(table_rows)
  [ "$count" != "$last" ] && log "table rows: $count"; last=$count
  if [ "$count" != "?" ] && [ "$count" -gt "$N" ] 2>/dev/null; then die "table has $count rows > $N produced"; fi
  # kill mid-stream: after the first commit landed and while the producer is still running
  if [ "$KILLED" = 0 ] && [[ "$SCENARIO" == kill-* ]] && [ "$count" != "?" ] && [ "$count" -gt 0 ] && kill -0 $PROD_PID 2>/dev/null; then
    if [ "$SCENARIO" = kill-connect ]; then
      kill -9 $CONNECT_PID; wait $CONNECT_PID 2>/dev/null || true
      log "SIGKILL Connect (pid $CONNECT_PID) at $count committed rows, producer at: $(tail -1 "$RUN/produce.log")"
      sleep 3; start_connect
    else
      kill -9 $FLOE_PID; wait $FLOE_PID 2>/dev/null || true
      log "SIGKILL floe (pid $FLOE_PID) at $count committed rows, producer at: $(tail -1 "$RUN/produce.log")"
      sleep "${FLOE_DOWN_SECS:-$(( COMMIT_INTERVAL_MS * 3 / 2000 ))}"; start_floe
    fi
    KILLED=1
  fi
  st=$(connector_status)
  if grep -q '"FAILED"' <<<"$st"; then
    failed_traces <<<"$st" >>"$RUN/failed-traces.txt"
    if [[ "$SCENARIO" == kill-* ]] && [ "$RESTARTS" -lt "${MAX_TASK_RESTARTS:-3}" ]; then
      RESTARTS=$((RESTARTS+1))
      log "task FAILED after the kill (trace: $(failed_traces <<<"$st" | head -c 300 | tr '\n' ' ')); restart #$RESTARTS via REST"
      curl -sf -X POST "$REST/connectors/iceberg-sink/restart?includeTasks=true&onlyFailed=true" >/dev/null || true
    else
      failed_traces <<<"$st"; die "connector/task FAILED"
    fi
  fi
  if [ "$count" = "$N" ] && ! kill -0 $PROD_PID 2>/dev/null; then
    # settle: wait two more commit intervals; late duplicates would show up here
    if [ "$reached" = 0 ]; then reached=$(date +%s); fi
    [ $(( $(date +%s) - reached )) -ge $(( COMMIT_INTERVAL_MS * 2 / 1000 + 5 )) ] && break
  fi
  [ "$(date +%s)" -lt "$end" ] || die "timeout: $count of $N rows after ${WAIT_SECS}s"
  sleep 3
done
wait $PROD_PID || die "producer failed: $(tail -3 "$RUN/produce.log")"
(cd "$HERE" && "$PY" check.py verify "$CAT/iceberg" "$S3" "$ARN" "$NS" "$TABLE" "$N") >"$RUN/verify.txt" 2>&1 \
  || { tail -30 "$RUN/verify.txt"; die "verify"; }
grep -v '^snapshot ' "$RUN/verify.txt"; log "$(grep -c '^snapshot ' "$RUN/verify.txt") snapshots; last: $(grep '^snapshot ' "$RUN/verify.txt" | tail -1 | cut -c1-400)"
if [ "$SCENARIO" = iam ] || [ "$SCENARIO" = iam-role ]; then # least privilege, yet nothing the sink asked for was refused
  DENIED=$(tail -n +$AUDIT_FROM "$RUN/floe.log" | grep -c '"decision":"deny".*kafka-sink' || true)
  [ "$DENIED" = 0 ] || { tail -n +$AUDIT_FROM "$RUN/floe.log" | grep '"decision":"deny".*kafka-sink' | head -5; die "$DENIED denials of kafka-sink"; }
  log "kafka-sink: no request refused ($(grep -c '"decision":"write".*kafka-sink' "$RUN/floe.log" || true) writes audited$(
      [ -z "$SINK_TOKEN" ] || printf ', %s by the assumed role' "$(grep -c '"decision":"write".*assumed-role/kafka-sink-role' "$RUN/floe.log" || true)"))"
fi
log "PASS: $N events -> exactly $N rows (Iceberg $ICEBERG_VERSION, checksum $CHECKSUM, scenario $SCENARIO, task restarts $RESTARTS)"
if [ "${DEMO:-0}" = 1 ]; then
  log "the table, queried with PyIceberg:"
  (cd "$HERE" && "$PY" check.py show "$CAT/iceberg" "$S3" "$ARN" "$NS" "$TABLE") 2>>"$RUN/check.log"
fi
exit 0
}
