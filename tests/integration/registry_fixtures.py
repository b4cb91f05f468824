"""A real schema registry for the floe sink Avro tests: Apicurio Registry, built from Maven
Central by `tests/compat/fetch.sh registry` into tests/compat/.cache/apicurio-registry-<v>/
(on first use, as the Kafka fixture fetches Kafka), run on 127.0.0.1 on a free port with
in-memory storage and a small heap. Clients speak its Confluent-compatible API
(`url` = .../apis/ccompat/v7); its access log (in `log_path`) tells which paths were asked
for, so a test can count the schema fetches floe sink made."""
import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import REPO, free_port, terminate

POM = REPO / "tests/compat/apicurio/pom.xml"
APICURIO_VERSION = re.search(r"<apicurio.version>(.*?)</apicurio.version>", POM.read_text()).group(1)
HOME = REPO / "tests/compat/.cache" / ("apicurio-registry-" + APICURIO_VERSION)
CT = "application/vnd.schemaregistry.v1+json"


class Apicurio:
    def __init__(self, workdir):
        self.workdir = workdir
        self.log_path = workdir / "apicurio.log"
        self.proc = None

    def start(self, timeout=120):
        port = free_port()
        self.base = "http://127.0.0.1:%d" % port
        self.url = self.base + "/apis/ccompat/v7"
        cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
               "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=%d" % port,
               "-Dquarkus.http.access-log.enabled=true", "-Dquarkus.log.console.color=false",
               "-jar", str(HOME / "apicurio-registry-runner.jar")]
        self.logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, cwd=self.workdir, stdout=self.logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.base + "/apis/registry/v2/system/info", timeout=2) as r:
                    self.info = json.loads(r.read())
                    return self
            except (OSError, urllib.error.URLError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("Apicurio Registry did not start:\n" + self.log()[-3000:])
            time.sleep(0.25)

    def request(self, method, path, doc=None):
        """(status, parsed JSON body) of one ccompat call."""
        rq = urllib.request.Request(self.url + path, method=method,
                                    data=None if doc is None else json.dumps(doc).encode(),
                                    headers={"Content-Type": CT, "Accept": CT})
        try:
            with urllib.request.urlopen(rq, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def register(self, subject, schema):
        """Registers an Avro schema under subject; its id (what goes in the wire format)."""
        st, doc = self.request("POST", "/subjects/%s/versions" % subject, {"schema": json.dumps(schema)})
        assert st == 200, (st, doc)
        return doc["id"]

    def fetches(self):
        """{schema id: GET /schemas/ids/<id> requests served}, from the access log."""
        out = {}
        for m in re.finditer(r'method="GET" path="/apis/ccompat/v7/schemas/ids/(\d+)"', self.log()):
            out[int(m.group(1))] = out.get(int(m.group(1)), 0) + 1
        return out

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self):
        terminate(self.proc)
        if self.proc:
            self.logf.close()
        self.proc = None


@pytest.fixture(scope="module")
def apicurio(tmp_path_factory):
    if not shutil.which("java") or not shutil.which("mvn"):
        pytest.fail("java and mvn are needed (scripts/install-deps.sh installs them)")
    r = subprocess.run(["bash", str(REPO / "tests/compat/fetch.sh"), "registry"], capture_output=True, text=True,
                       timeout=1200, env=dict(os.environ))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    reg = Apicurio(tmp_path_factory.mktemp("apicurio")).start()
    yield reg
    reg.stop()
