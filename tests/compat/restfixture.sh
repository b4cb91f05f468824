#!/usr/bin/env bash
# Fetch (from Maven Central, into the shared local repo tests/compat/.cache/m2) the jars of
# Apache Iceberg's reference REST catalog server listed in tests/compat/restfixture/pom.xml,
# and print the server's Java classpath on stdout (progress goes to stderr).
# Idempotent: the lib directory is rebuilt only when the pom changes.
#   tests/compat/restfixture.sh            fetch if needed, print the classpath
#   tests/compat/restfixture.sh run        fetch, then run the server in the foreground on
#                                          127.0.0.1:$REST_PORT (RestFixture.java), configured
#                                          by CATALOG_* environment variables
# Env: COMPAT_CACHE (tests/compat/.cache of the main git worktree, so that every worktree
#      shares one download), M2_REPO ($COMPAT_CACHE/m2, the repo fetch.sh uses too).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
main="$(git -C "$HERE" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)"
if [ -n "$main" ] && [ -d "$(dirname "$main")/tests/compat" ]; then
  CACHE="${COMPAT_CACHE:-$(dirname "$main")/tests/compat/.cache}"
else
  CACHE="${COMPAT_CACHE:-$HERE/.cache}"
fi
M2_REPO="${M2_REPO:-$CACHE/m2}"
POM="$HERE/restfixture/pom.xml"
VERSION="$(sed -n 's:.*<iceberg.version>\(.*\)</iceberg.version>.*:\1:p' "$POM")"
OUT="$CACHE/restfixture-$VERSION/lib"
mkdir -p "$CACHE"

if [ -f "$OUT/.pom" ] && cmp -s "$OUT/.pom" "$POM" && [ -n "$(ls "$OUT"/*.jar 2>/dev/null)" ]; then
  echo "restfixture: cached ($(ls "$OUT"/*.jar | wc -l) jars in $OUT)" >&2
else
  echo "restfixture: resolving Iceberg $VERSION REST catalog server ..." >&2
  rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
  log="$CACHE/restfixture-$VERSION/mvn.log"
  mvn -q -B -f "$POM" -Dmaven.repo.local="$M2_REPO" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$OUT.tmp" \
      > "$log" 2>&1 || { cat "$log" >&2; echo "restfixture: mvn failed" >&2; exit 1; }
  cp "$POM" "$OUT.tmp/.pom"
  rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
  echo "restfixture: $(ls "$OUT"/*.jar | wc -l) jars -> $OUT" >&2
fi
listing="$(for j in "$OUT"/iceberg-open-api-*.jar "$OUT"/iceberg-core-*-tests.jar; do unzip -l "$j"; done)"
for cls in org/apache/iceberg/rest/RESTCatalogServer.class org/apache/iceberg/rest/RESTCatalogAdapter.class; do
  grep -qF "$cls" <<<"$listing" || { echo "restfixture: $cls missing from $OUT" >&2; exit 1; }
done

CP="$OUT/*"
if [ "${1:-}" = run ]; then
  exec java -cp "$CP" "$HERE/RestFixture.java"
fi
echo "$CP"
