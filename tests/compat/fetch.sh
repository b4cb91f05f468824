#!/usr/bin/env bash
# Fetch, from Maven Central only, everything tests/compat/run.sh needs:
#   .cache/kafka-$KAFKA_VERSION/lib/        Kafka broker (KRaft) + Connect runtime, with runtime deps
#   .cache/plugins/iceberg-$ICEBERG_VERSION/ the Kafka Connect plugin directory of the source
#       document: iceberg-kafka-connect (+ -events), iceberg-aws-bundle, iceberg-aws,
#       iceberg-parquet, hadoop-client-runtime, hadoop-client-api, failsafe, and their runtime deps.
#   .cache/spark-iceberg-$SPARK_ICEBERG_VERSION/ (only with the `spark` target) the jars a
#       pyspark session loads for tests/integration/test_spark_sql.py: iceberg-spark-runtime
#       (Spark $SPARK_MINOR, Scala $SCALA_BINARY) and iceberg-aws-bundle (SigV4, S3FileIO).
#   .cache/oss-iceberg-$OSS_ICEBERG_VERSION/ (only with the `oss` target) the Java Iceberg library
#       with Iceberg's OSSFileIO: iceberg-core, -data, -parquet, -aws (+ aws-bundle: the REST
#       catalog's SigV4 signer), iceberg-aliyun and the aliyun-sdk-oss it is built against,
#       hadoop-client-runtime/-api (Parquet's Configuration); tests/compat/JavaPeer.java runs on it
#       with FLOE_FILE_IO=oss (tests/integration/test_oss_fileio.py).
#   .cache/plugins/iceberg-$IV-oss/ (only with the `sink-oss` target) the sink plugin above plus
#       iceberg-aliyun and aliyun-sdk-oss (OSSFileIO), for run.sh's SCENARIO=oss.
#   .cache/apicurio-registry-$V/ (only with the `registry` target) Apicurio Registry, a schema
#       registry with a Confluent-compatible API, built by Quarkus from Maven Central's
#       io.apicurio:apicurio-registry-app (tests/compat/apicurio/pom.xml says how):
#       apicurio-registry-runner.jar + lib/, run by tests/integration/registry_fixtures.py.
# Usage: fetch.sh [kafka] [sink] [sink-oss] [spark] [oss] [registry]; no target = kafka sink (what
# the compat runs need).
# Idempotent: a directory is rebuilt only when its generated pom changes.
# Env: KAFKA_VERSION (3.9.2), ICEBERG_VERSIONS ("1.10.1 1.12.0"), HADOOP_VERSION (3.3.6),
#      FAILSAFE_VERSION (3.3.2), M2_REPO (tests/compat/.cache/m2),
#      SPARK_ICEBERG_VERSION (1.10.1), SPARK_MINOR (3.5, as pyspark in tests/requirements.txt),
#      SCALA_BINARY (2.12, pyspark 3.5's Scala), OSS_ICEBERG_VERSION (1.10.1),
#      ALIYUN_OSS_VERSION (3.10.2: the aliyun-sdk-oss iceberg-aliyun 1.10.1 is built against).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${COMPAT_CACHE:-$HERE/.cache}"
KAFKA_VERSION="${KAFKA_VERSION:-3.9.2}"
ICEBERG_VERSIONS="${ICEBERG_VERSIONS:-1.10.1 1.12.0}"
HADOOP_VERSION="${HADOOP_VERSION:-3.3.6}"
FAILSAFE_VERSION="${FAILSAFE_VERSION:-3.3.2}"
M2_REPO="${M2_REPO:-$CACHE/m2}"
SPARK_ICEBERG_VERSION="${SPARK_ICEBERG_VERSION:-1.10.1}"
SPARK_MINOR="${SPARK_MINOR:-3.5}"
SCALA_BINARY="${SCALA_BINARY:-2.12}"
OSS_ICEBERG_VERSION="${OSS_ICEBERG_VERSION:-1.10.1}"
ALIYUN_OSS_VERSION="${ALIYUN_OSS_VERSION:-3.10.2}"
TARGETS="${*:-kafka sink}"
want() { [[ " $TARGETS " == *" $1 "* ]]; }
mkdir -p "$CACHE"

dep() { # group artifact version [exclusion-group...]
  local g=$1 a=$2 v=$3; shift 3
  printf '    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>' "$g" "$a" "$v"
  if [ $# -gt 0 ]; then
    printf '<exclusions>'
    for x in "$@"; do printf '<exclusion><groupId>%s</groupId><artifactId>*</artifactId></exclusion>' "$x"; done
    printf '</exclusions>'
  fi
  printf '</dependency>\n'
}

pom() { # name deps-xml
  cat <<P
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>floe.compat</groupId><artifactId>$1</artifactId><version>0</version><packaging>pom</packaging>
  <dependencies>
$2
  </dependencies>
</project>
P
}

# resolve name outdir pom-text: copy runtime deps of the pom into outdir (skip when unchanged)
resolve() {
  local name=$1 out=$2 text=$3 work="$CACHE/poms/$1"
  mkdir -p "$work"
  if [ -f "$out/.pom" ] && [ "$(cat "$out/.pom")" = "$text" ] && [ -n "$(ls "$out"/*.jar 2>/dev/null)" ]; then
    echo "fetch: $name cached ($(ls "$out"/*.jar | wc -l) jars in $out)"
    return 0
  fi
  printf '%s\n' "$text" > "$work/pom.xml"
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  echo "fetch: resolving $name ..."
  mvn -q -B -f "$work/pom.xml" -Dmaven.repo.local="$M2_REPO" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$out.tmp" \
      > "$work/mvn.log" 2>&1 || { cat "$work/mvn.log" >&2; echo "fetch: mvn failed for $name" >&2; return 1; }
  printf '%s' "$text" > "$out.tmp/.pom"
  rm -rf "$out"; mv "$out.tmp" "$out"
  echo "fetch: $name -> $out ($(ls "$out"/*.jar | wc -l) jars)"
}

# --- Kafka broker + Connect worker -------------------------------------------------
K=org.apache.kafka
I=org.apache.iceberg
want kafka && resolve "kafka-$KAFKA_VERSION" "$CACHE/kafka-$KAFKA_VERSION/lib" "$(pom kafka-$KAFKA_VERSION "$(
  dep $K kafka_2.13 "$KAFKA_VERSION"
  dep $K kafka-tools "$KAFKA_VERSION"
  dep $K connect-runtime "$KAFKA_VERSION"
  dep $K connect-json "$KAFKA_VERSION"
  dep $K connect-transforms "$KAFKA_VERSION"
  dep org.slf4j slf4j-reload4j 1.7.36
)")"

# --- Iceberg sink plugin directories ---------------------------------------------
sink_deps() { # IV
  dep $I iceberg-kafka-connect "$1" $K
  dep $I iceberg-kafka-connect-events "$1" $K
  dep $I iceberg-aws-bundle "$1"
  dep $I iceberg-aws "$1"
  dep $I iceberg-parquet "$1"
  dep org.apache.hadoop hadoop-client-runtime "$HADOOP_VERSION"
  dep org.apache.hadoop hadoop-client-api "$HADOOP_VERSION"
  dep dev.failsafe failsafe "$FAILSAFE_VERSION"
}
want sink-oss && for IV in $ICEBERG_VERSIONS; do
  resolve "iceberg-$IV-oss" "$CACHE/plugins/iceberg-$IV-oss/iceberg-sink" "$(pom iceberg-$IV-oss "$(
    sink_deps "$IV"
    dep $I iceberg-aliyun "$IV"
    dep com.aliyun.oss aliyun-sdk-oss "$ALIYUN_OSS_VERSION"
  )")"
done
want sink && for IV in $ICEBERG_VERSIONS; do
  out="$CACHE/plugins/iceberg-$IV"
  # one sub-directory = one plugin (Connect isolates each in its own class loader)
  resolve "iceberg-$IV" "$out/iceberg-sink" "$(pom iceberg-$IV "$(sink_deps "$IV")")"
  listing="$(unzip -l "$out/iceberg-sink/iceberg-kafka-connect-$IV.jar")"
  if ! grep -q 'org/apache/iceberg/connect/IcebergSinkConnector.class' <<<"$listing"; then
    echo "fetch: iceberg-kafka-connect-$IV.jar has no IcebergSinkConnector (see sink.md §1.4)" >&2; exit 1
  fi
done
# --- Spark SQL peer: the Iceberg runtime and the AWS bundle (both shaded, no other deps) ---
if want spark; then
  resolve "spark-iceberg-$SPARK_ICEBERG_VERSION" "$CACHE/spark-iceberg-$SPARK_ICEBERG_VERSION" "$(
    pom spark-iceberg-$SPARK_ICEBERG_VERSION "$(
      dep $I "iceberg-spark-runtime-${SPARK_MINOR}_$SCALA_BINARY" "$SPARK_ICEBERG_VERSION"
      dep $I iceberg-aws-bundle "$SPARK_ICEBERG_VERSION"
    )")"
fi
# --- OSSFileIO peer: the Java Iceberg library with iceberg-aliyun and the OSS Java SDK ---
if want oss; then
  resolve "oss-iceberg-$OSS_ICEBERG_VERSION" "$CACHE/oss-iceberg-$OSS_ICEBERG_VERSION" "$(
    pom oss-iceberg-$OSS_ICEBERG_VERSION "$(
      dep $I iceberg-core "$OSS_ICEBERG_VERSION"
      dep $I iceberg-data "$OSS_ICEBERG_VERSION"
      dep $I iceberg-parquet "$OSS_ICEBERG_VERSION"
      dep $I iceberg-aws "$OSS_ICEBERG_VERSION"
      dep $I iceberg-aws-bundle "$OSS_ICEBERG_VERSION"
      dep $I iceberg-aliyun "$OSS_ICEBERG_VERSION"
      dep com.aliyun.oss aliyun-sdk-oss "$ALIYUN_OSS_VERSION"
      dep org.apache.hadoop hadoop-client-runtime "$HADOOP_VERSION"
      dep org.apache.hadoop hadoop-client-api "$HADOOP_VERSION"
    )")"
fi
# --- Apicurio Registry: a Quarkus build of the app artifact (every repository mirrored to Central) ---
if want registry; then
  src="$HERE/apicurio"
  av="$(sed -n 's:.*<apicurio.version>\(.*\)</apicurio.version>.*:\1:p' "$src/pom.xml")"
  out="$CACHE/apicurio-registry-$av" work="$CACHE/poms/apicurio-registry-$av"
  stamp="$(cd "$src" && find . -type f | LC_ALL=C sort | xargs sha256sum)"
  if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] && [ -f "$out/apicurio-registry-runner.jar" ]; then
    echo "fetch: apicurio-registry-$av cached ($out)"
  else
    echo "fetch: building apicurio-registry-$av ..."
    rm -rf "$work" "$out.tmp"; mkdir -p "$work" "$out.tmp"
    cp -r "$src/." "$work/"
    mvn -B -s "$work/settings.xml" -f "$work/pom.xml" -Dmaven.repo.local="$M2_REPO" package \
        > "$work/mvn.log" 2>&1 || { tail -60 "$work/mvn.log" >&2; echo "fetch: mvn failed for apicurio-registry-$av (log: $work/mvn.log)" >&2; exit 1; }
    cp "$work"/target/*-runner.jar "$out.tmp/apicurio-registry-runner.jar"
    cp -r "$work/target/lib" "$out.tmp/lib"
    printf '%s' "$stamp" > "$out.tmp/.stamp"
    rm -rf "$out" "$work/target"; mv "$out.tmp" "$out"
    echo "fetch: apicurio-registry-$av -> $out ($(ls "$out/lib" | wc -l) jars)"
  fi
fi
echo "fetch: done; cache $(du -sh "$CACHE" | cut -f1) at $CACHE"
