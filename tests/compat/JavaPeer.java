// The Java Iceberg library as a test peer (the jars of the Kafka Connect Iceberg
// sink plugin, fetched by tests/compat/fetch.sh): scans a table through floe's
// REST catalog with IcebergGenerics and prints its rows as JSON lines, or
// appends generated rows with Java's own Parquet writer, manifests and commit.
//
//   java -cp 'PLUGIN/*' tests/compat/JavaPeer.java scan NS.TABLE [SNAPSHOT_ID]
//   java -cp 'PLUGIN/*' tests/compat/JavaPeer.java append NS.TABLE FIRST N
//   java -cp 'PLUGIN/*' tests/compat/JavaPeer.java plan NS.TABLE FIELD MIN_EXCLUSIVE
//   java -cp 'PLUGIN/*' tests/compat/JavaPeer.java create NS.TABLE [category]
//       (prints the table's location; "category": partitioned by category alone)
//   java -cp 'PLUGIN/*' tests/compat/JavaPeer.java repl   (one command a line on stdin, each answered
//       by its output and a line --ok-- or --failed--; one JVM for many commands)
// A command "s3:CMD ..." uses S3FileIO whatever FLOE_FILE_IO says.
//
// Connection from the environment: FLOE_CATALOG_URI (…/iceberg), FLOE_WAREHOUSE (bucket ARN),
// FLOE_S3_ENDPOINT, FLOE_ACCESS_KEY_ID, FLOE_SECRET_ACCESS_KEY, FLOE_REGION.
// FLOE_FILE_IO=oss: Iceberg's OSSFileIO (iceberg-aliyun + aliyun-sdk-oss, fetch.sh oss) instead of
// S3FileIO, with the catalog's oss.endpoint and client.access-key-id/-secret, the REST catalog
// signed SigV4 "osstables"; FLOE_S3_ENDPOINT is not used then.
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.*;
import java.time.format.DateTimeFormatter;
import java.util.*;
import org.apache.iceberg.*;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.*;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.*;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

public class JavaPeer {
    static String env(String k) {
        String v = System.getenv(k);
        if (v == null) throw new IllegalArgumentException("missing env " + k);
        return v;
    }

    static RESTCatalog catalog(String io) {
        Map<String, String> p = new HashMap<>();
        p.put("uri", env("FLOE_CATALOG_URI"));
        p.put("warehouse", env("FLOE_WAREHOUSE"));
        p.put("rest.sigv4-enabled", "true");
        p.put("rest.signing-region", env("FLOE_REGION"));
        p.put("rest.access-key-id", env("FLOE_ACCESS_KEY_ID"));
        p.put("rest.secret-access-key", env("FLOE_SECRET_ACCESS_KEY"));
        p.put("client.region", env("FLOE_REGION"));
        if ("oss".equals(io)) {
            p.put("rest.signing-name", "osstables");
            p.put("io-impl", "org.apache.iceberg.aliyun.oss.OSSFileIO");
            p.put("client.access-key-id", env("FLOE_ACCESS_KEY_ID"));
            p.put("client.access-key-secret", env("FLOE_SECRET_ACCESS_KEY"));
            RESTCatalog c = new RESTCatalog();
            c.initialize("floe", p);
            return c;
        }
        p.put("rest.signing-name", "s3tables");
        p.put("io-impl", "org.apache.iceberg.aws.s3.S3FileIO");
        p.put("s3.endpoint", env("FLOE_S3_ENDPOINT"));
        p.put("s3.access-key-id", env("FLOE_ACCESS_KEY_ID"));
        p.put("s3.secret-access-key", env("FLOE_SECRET_ACCESS_KEY"));
        p.put("s3.path-style-access", "true");
        RESTCatalog c = new RESTCatalog();
        c.initialize("floe", p);
        return c;
    }

    static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS");

    static void json(StringBuilder sb, Object v) {
        if (v == null) { sb.append("null"); return; }
        if (v instanceof Integer || v instanceof Long || v instanceof Boolean) { sb.append(v); return; }
        if (v instanceof Float || v instanceof Double) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) str(sb, Double.toString(d)); else sb.append(v);
            return;
        }
        if (v instanceof BigDecimal) { str(sb, ((BigDecimal) v).toPlainString()); return; }
        if (v instanceof OffsetDateTime) {
            str(sb, ((OffsetDateTime) v).withOffsetSameInstant(ZoneOffset.UTC).format(TS) + "+00:00");
            return;
        }
        if (v instanceof LocalDateTime) { str(sb, ((LocalDateTime) v).format(TS)); return; }
        if (v instanceof CharSequence || v instanceof LocalDate || v instanceof LocalTime || v instanceof UUID) {
            str(sb, v.toString());
            return;
        }
        if (v instanceof ByteBuffer || v instanceof byte[]) {
            ByteBuffer b = v instanceof ByteBuffer ? ((ByteBuffer) v).duplicate() : ByteBuffer.wrap((byte[]) v);
            StringBuilder h = new StringBuilder();
            while (b.hasRemaining()) h.append(String.format("%02x", b.get() & 0xff));
            str(sb, h.toString());
            return;
        }
        if (v instanceof List) {
            sb.append('[');
            boolean first = true;
            for (Object x : (List<?>) v) { if (!first) sb.append(','); first = false; json(sb, x); }
            sb.append(']');
            return;
        }
        if (v instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) sb.append(',');
                first = false;
                str(sb, String.valueOf(e.getKey()));
                sb.append(':');
                json(sb, e.getValue());
            }
            sb.append('}');
            return;
        }
        if (v instanceof Record) {
            Record r = (Record) v;
            sb.append('{');
            List<Types.NestedField> fs = r.struct().fields();
            for (int i = 0; i < fs.size(); i++) {
                if (i > 0) sb.append(',');
                str(sb, fs.get(i).name());
                sb.append(':');
                json(sb, r.get(i));
            }
            sb.append('}');
            return;
        }
        str(sb, v.toString());
    }

    static void str(StringBuilder sb, String s) {
        sb.append('"');
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
    }

    static void scan(Table t, Long snapshot) throws Exception {
        IcebergGenerics.ScanBuilder b = IcebergGenerics.read(t);
        if (snapshot != null) b = b.useSnapshot(snapshot);
        StringBuilder sb = new StringBuilder();
        try (CloseableIterable<Record> rows = b.build()) {
            for (Record r : rows) {
                sb.setLength(0);
                json(sb, r);
                System.out.println(sb);
            }
        }
    }

    // Rows of the shape tests/integration/test_java_interop.py creates:
    // id long, ts timestamptz, category string, amount decimal(10,2), score double,
    // info struct<a int, b string>, tags list<string>, attrs map<string, long>.
    static Record row(Schema s, long i) {
        GenericRecord r = GenericRecord.create(s);
        String[] cats = {"alpha", "beta", "gamma"};
        r.setField("id", i);
        r.setField("ts", i % 97 == 0 ? null
                : OffsetDateTime.of(2024, 3, 1, 0, 0, 0, 0, ZoneOffset.UTC).plusHours((i * 7) % 72).plusNanos(i * 1000));
        r.setField("category", i % 89 == 0 ? null : cats[(int) (i % 3)]);
        r.setField("amount", i % 5 == 0 ? null : BigDecimal.valueOf((i % 1000 - 500) * 100 + (i % 100) * ((i % 1000 - 500) < 0 ? -1 : 1), 2));
        r.setField("score", i % 7 == 0 ? null : i / 8.0);
        if (i % 11 == 0) r.setField("info", null);
        else {
            GenericRecord info = GenericRecord.create(s.findField("info").type().asStructType());
            info.setField("a", (int) (i % 13));
            info.setField("b", "b" + (i % 4));
            r.setField("info", info);
        }
        if (i % 17 == 0) r.setField("tags", null);
        else {
            List<String> tags = new ArrayList<>();
            for (int k = 0; k < i % 3; k++) tags.add("t" + (i % 5));
            r.setField("tags", tags);
        }
        r.setField("attrs", Map.of("k" + (i % 2), i));
        return r;
    }

    static void append(Table t, long first, long n) throws Exception {
        Schema s = t.schema();
        OutputFileFactory off = OutputFileFactory.builderFor(t, 1, System.nanoTime()).format(FileFormat.PARQUET).build();
        GenericAppenderFactory af = new GenericAppenderFactory(s, t.spec());
        PartitionKey pk = new PartitionKey(t.spec(), s);
        InternalRecordWrapper wrap = new InternalRecordWrapper(s.asStruct());
        Map<PartitionKey, org.apache.iceberg.io.DataWriter<Record>> writers = new LinkedHashMap<>();
        for (long i = first; i < first + n; i++) {
            Record r = row(s, i);
            pk.partition(wrap.wrap(r));
            org.apache.iceberg.io.DataWriter<Record> w = writers.get(pk);
            if (w == null) {
                PartitionKey key = pk.copy();
                w = af.newDataWriter(off.newOutputFile(t.spec(), key), FileFormat.PARQUET, key);
                writers.put(key, w);
            }
            w.write(r);
        }
        AppendFiles app = t.newAppend();
        for (org.apache.iceberg.io.DataWriter<Record> w : writers.values()) {
            w.close();
            app.appendFile(w.toDataFile());
        }
        app.set("java.peer", "1");
        app.commit();
        System.out.println(t.currentSnapshot().snapshotId());
    }

    // The schema and spec of tests/integration/test_append_scan.py (SCHEMA, SPEC).
    static Table create(RESTCatalog c, TableIdentifier id, boolean byCategory) {
        Schema s = new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "ts", Types.TimestampType.withZone()),
            Types.NestedField.optional(3, "category", Types.StringType.get()),
            Types.NestedField.optional(4, "amount", Types.DecimalType.of(10, 2)),
            Types.NestedField.optional(5, "score", Types.DoubleType.get()),
            Types.NestedField.optional(6, "info", Types.StructType.of(
                Types.NestedField.optional(7, "a", Types.IntegerType.get()),
                Types.NestedField.optional(8, "b", Types.StringType.get()))),
            Types.NestedField.optional(9, "tags", Types.ListType.ofOptional(10, Types.StringType.get())),
            Types.NestedField.optional(11, "attrs",
                Types.MapType.ofOptional(12, 13, Types.StringType.get(), Types.LongType.get())));
        PartitionSpec spec = byCategory ? PartitionSpec.builderFor(s).identity("category").build()
            : PartitionSpec.builderFor(s).day("ts", "ts_day").identity("category").bucket("id", 4, "id_bucket").build();
        if (!c.namespaceExists(id.namespace())) c.createNamespace(id.namespace());
        return c.createTable(id, s, spec);
    }

    static final Map<String, RESTCatalog> CATALOGS = new HashMap<>();

    public static void main(String[] a) throws Exception {
        try {
            if (!a[0].equals("repl")) {
                run(a);
                return;
            }
            java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
            for (String line; (line = in.readLine()) != null; ) {
                line = line.trim();
                if (line.isEmpty()) continue;
                try {
                    run(line.split("\\s+"));
                    System.out.println("--ok--");
                } catch (Exception e) {
                    e.printStackTrace();
                    System.out.println("--failed--");
                }
                System.out.flush();
            }
        } finally {
            for (RESTCatalog c : CATALOGS.values()) c.close();
        }
    }

    static void run(String[] a) throws Exception {
        String io = System.getenv("FLOE_FILE_IO");
        if (a[0].startsWith("s3:")) {
            io = "s3";
            a[0] = a[0].substring(3);
        }
        RESTCatalog c = CATALOGS.get(String.valueOf(io));
        if (c == null) {
            c = catalog(io);
            CATALOGS.put(String.valueOf(io), c);
        }
        {
            if (a[0].equals("create")) {
                boolean byCategory = a.length > 2 && a[2].equals("category");
                System.out.println(create(c, TableIdentifier.parse(a[1]), byCategory).location());
                return;
            }
            Table t = c.loadTable(TableIdentifier.parse(a[1]));
            switch (a[0]) {
                case "scan": scan(t, a.length > 2 ? Long.parseLong(a[2]) : null); break;
                case "append": append(t, Long.parseLong(a[2]), Long.parseLong(a[3])); break;
                case "plan": {
                    int files = 0;
                    try (CloseableIterable<FileScanTask> tasks =
                             t.newScan().filter(Expressions.greaterThan(a[2], Long.parseLong(a[3]))).planFiles()) {
                        for (FileScanTask task : tasks) files++;
                    }
                    int all = 0;
                    try (CloseableIterable<FileScanTask> tasks = t.newScan().planFiles()) {
                        for (FileScanTask task : tasks) all++;
                    }
                    System.out.println(files + " " + all);
                    break;
                }
                default: throw new IllegalArgumentException("unknown command " + a[0]);
            }
        }
    }
}
