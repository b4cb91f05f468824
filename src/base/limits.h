/* Every size and time cap whose input a peer controls, in one place. */
#ifndef FL_BASE_LIMITS_H
#define FL_BASE_LIMITS_H

#define FL_HTTP_MAX_HEAD_BYTES     (64 * 1024)   /* request line + headers */
#define FL_HTTP_MAX_HEADERS        100
#define FL_HTTP_MAX_TARGET_BYTES   (16 * 1024)   /* request-target */
#define FL_HTTP_IDLE_TIMEOUT_MS    60000          /* keep-alive idle */
#define FL_HTTP_READ_TIMEOUT_MS    30000          /* no byte for this long mid-request */
#define FL_HTTP_HEAD_TIMEOUT_MS    30000          /* whole request head must arrive within */
#define FL_HTTP_MAX_CONNECTIONS    8192           /* per server; lowered to fit RLIMIT_NOFILE */
#define FL_HTTP_MAX_CONNS_PER_ADDR 512            /* per client address (IPv6: per /64) */
#define FL_HTTP_MAX_ACTIVE_PER_ADDR 128           /* mid-request (threaded) per address; more wait */
#define FL_HTTP_FD_RESERVE         1024           /* descriptors kept for files when sizing the cap */
#define FL_HTTP_KEEPALIVE_LINGER_MS 20            /* a worker waits this long for the next request before parking */
#define FL_HTTP_BODY_GRACE_MS      10000          /* a body may arrive at any pace for this long ... */
#define FL_HTTP_BODY_MIN_RATE      (32 * 1024)    /* ... then must average this many bytes/s (deadline
                                                   * for L bytes: GRACE + L / RATE from the first read) */
#define FL_HTTP_MAX_CHUNK_LINE     4096           /* chunk-size line incl. extensions */
#define FL_HTTP_MAX_TRAILER_BYTES  (16 * 1024)
#define FL_HTTP_WRITE_TIMEOUT_MS   30000          /* no send progress for this long */
#define FL_HTTP_DRAIN_MAX_BYTES    (1024 * 1024)  /* unread request body drained after a response; more: close */
#define FL_HTTP_LINGER_MS          2000           /* input discarded this long after a closing response */
#define FL_HTTP_METRICS_MAX_OPS    64             /* distinct op labels per server (then "other") */
#define FL_HTTP_METRICS_MAX_SERIES 256            /* distinct (op, status) label sets per server */
#define FL_QUERY_MAX_PARAMS        64             /* query parameters of one request */
#define FL_QUERY_MAX_NAME_BYTES    4096           /* one decoded query parameter name */

#define FL_CATALOG_MAX_BODY        (8 * 1024 * 1024) /* a JSON request body on the catalog port */
#define FL_CATALOG_MAX_PAGE        1000           /* items per list page (S3 Tables and REST) */
#define FL_REST_MAX_PATH_SEGMENTS  8              /* segments of a REST catalog path after the prefix */
#define FL_TABLES_MAX_POLICY_CHARS 20480          /* a table-bucket or table policy document */
#define FL_TABLES_MAX_TAGS         50             /* tags on one resource */

#define FL_S3_MAX_OBJECT_BYTES     (5LL * 1024 * 1024 * 1024 * 1024) /* 5 TiB */
#define FL_S3_MAX_PUT_BYTES        (5LL * 1024 * 1024 * 1024)        /* single PUT/part: 5 GiB */
#define FL_S3_MIN_PART_BYTES       (5LL * 1024 * 1024)
#define FL_S3_MAX_PARTS            10000
#define FL_S3_MAX_KEY_BYTES        1024
#define FL_S3_MAX_XML_BODY         (2 * 1024 * 1024) /* DeleteObjects, Complete */
#define FL_S3_MAX_BUCKET_POLICY    20480             /* an S3 bucket policy document (AWS: 20 KB) */
#define FL_S3_MAX_DELETE_KEYS      1000
#define FL_S3_MAX_LIST_KEYS        1000
#define FL_STORE_MAX_FWD_HEADERS   256               /* an object's headers forwarded to a remote store */
#define FL_STORE_READ_CHUNK        (4 * 1024 * 1024) /* one ranged GET of a remote-store object */
#define FL_S3S_MAX_BUCKETS         100000            /* buckets read from a remote store's listing */
#define FL_S3_MAX_META_BYTES       (2 * 1024)        /* user metadata total, as S3 */

#define FL_XML_MAX_NODES           20000          /* elements of one XML request body */
#define FL_XML_MAX_DEPTH           16             /* nesting of an XML request body */
#define FL_HTTPC_MAX_ERROR_BODY    (64 * 1024)    /* a remote error answer kept for its message */
#define FL_REST_CLIENT_MAX_BODY    (512u << 20)   /* one REST catalog answer (metadata JSON can be large; S3 Tables caps it at 50 MB) */
#define FL_REST_CLIENT_MAX_PAGES   100000         /* pages followed by one list call */

#define FL_AWSCHUNK_MAX_CHUNK      (16 * 1024 * 1024)
#define FL_SIGV4_MAX_SKEW_S        (15 * 60)
#define FL_SIGV4_MAX_EXPIRES_S     604800
#define FL_SIGV4_MAX_SIGNED_HEADERS 4096           /* SignedHeaders list */
#define FL_SIGV4_MAX_CREDENTIAL    512            /* Credential / X-Amz-Credential value */

#define FL_ICEBERG_MAX_FIELDS      10000            /* fields in one schema or partition spec */
#define FL_ICEBERG_MAX_METADATA_BYTES (256LL * 1024 * 1024) /* one metadata.json read back */
#define FL_ICEBERG_MAX_EQUALITY_IDS 16               /* equality ids of one equality delete file (compaction) */
#define FL_REWRITE_SORT_GROUP_BYTES (512LL * 1024 * 1024) /* input bytes of one sort/z-order compaction group */
#define FL_REWRITE_SORT_MEM_BYTES  (1024LL * 1024 * 1024) /* rows of a sorted group held in memory before a run is written */
#define FL_PUFFIN_MAX_FOOTER_BYTES (16 * 1024 * 1024) /* a Puffin file's footer JSON (deletion vectors) */
#define FL_PUFFIN_MAX_FILE_BYTES   (512LL * 1024 * 1024) /* a Puffin file compaction reads whole for its DVs */
#define FL_REWRITE_MAX_ANCESTRY    100000           /* snapshots walked back for resume points a replace carries */
#define FL_ICEBERG_MAX_DEPTH       64               /* nesting depth of a schema's types */
/* updates in one REST commit (all tables of a transaction together). Spark and PyIceberg
 * send a handful, but Iceberg Java's expireSnapshots sends one remove-snapshots update
 * per expired snapshot: thousands on a streaming table. Each update costs O(its size)
 * (add-schema is indexed), so the cap bounds the time a commit holds its table's lock. */
#define FL_ICEBERG_MAX_COMMIT_UPDATES 10000
#define FL_MANIFEST_MAX_ENTRIES    (4 * 1024 * 1024) /* entries in one manifest / manifest list */
#define FL_AVRO_MAX_SCHEMA_NODES   65536            /* types in one Avro schema (manifests, Kafka records) */
#define FL_AVRO_MAX_SCHEMA_DEPTH   32               /* nesting of one Avro schema */

#define FL_AVRO_MAX_META_ENTRIES   1024              /* container header metadata map entries */
#define FL_AVRO_MAX_BLOCK_BYTES    (64 * 1024 * 1024) /* one container block, compressed or not */
#define FL_AVRO_MAX_BLOCK_RECORDS  (16 * 1024 * 1024) /* records in one container block */
#define FL_AVRO_MAX_ITEMS          (16 * 1024 * 1024) /* items in one array/map block */
#define FL_AVRO_MAX_BYTES          (64 * 1024 * 1024) /* one bytes/string value */

#define FL_THRIFT_MAX_DEPTH        64                  /* nesting of thrift compact structs, lists, maps */
#define FL_PQ_MAX_FOOTER_BYTES     (64 * 1024 * 1024)  /* Parquet FileMetaData */
#define FL_PQ_MAX_COLUMNS          10000               /* leaf columns (and schema elements / 4) */
#define FL_PQ_MAX_SCHEMA_DEPTH     32                  /* nesting of the Parquet schema tree */
#define FL_PQ_MAX_PAGE_BYTES       (256 * 1024 * 1024) /* one page, uncompressed */
#define FL_PQ_MAX_CHUNK_BYTES      (1024LL * 1024 * 1024) /* one column chunk, compressed */
#define FL_PQ_MAX_CHUNK_VALUES     (64 * 1024 * 1024)  /* level entries of one column chunk */
#define FL_PQ_MAX_NAME_MAPPING     (4 * 1024 * 1024)   /* name-mapping JSON text */

#define FL_POLICY_MAX_BYTES        20480   /* one policy document (S3 Tables' resource-policy cap) */
#define FL_POLICY_MAX_STATEMENTS   256     /* statements in one policy */
#define FL_POLICY_MAX_VALUES       1024    /* entries of one Action/Resource/Principal/condition list */
#define FL_POLICY_MAX_CONDITIONS   64      /* (operator, key) pairs in one statement */
#define FL_POLICY_MAX_STRING       2048    /* one string value in a policy */
#define FL_IAM_SESSION_MIN_S       900     /* AssumeRole DurationSeconds, as AWS */
#define FL_IAM_SESSION_DEFAULT_S   3600
#define FL_IAM_SESSION_MAX_S       43200
#define FL_IAM_SESSION_POLICY_MAX  2048    /* AssumeRole's inline session Policy (AWS's packed cap) */
#define FL_STORE_STREAM_PIPE       (1024 * 1024) /* pipe between a client's body and a streamed PUT to a
                                                  * remote store: what one such PUT buffers */
#define FL_IAM_VENDED_TTL_S        3600    /* lifetime of credentials the REST catalog vends for one table
                                            * (X-Iceberg-Access-Delegation: vended-credentials) */
#define FL_IAM_VENDED_CACHE        256     /* vended credentials a node keeps to hand out again while
                                            * more than half their lifetime is left (direct-mapped) */
#define FL_IAM_CACHE_TTL_MS        1000    /* keys, parsed policies, table lookups cached per node this long
                                            * (a change through this node's API invalidates at once) */
#define FL_IAM_CACHE_SLOTS         1024    /* entries of that cache (direct-mapped) */

/* floe sink: the Kafka records are sized by the broker's message.max.bytes; these bound
 * what one record may cost floe beyond that. */
#define FL_SINK_MAX_VALUE_BYTES    (64 * 1024 * 1024) /* one base64 value decoded (binary/fixed) */
#define FL_SINK_MAX_CONFIG_BYTES   (1024 * 1024)      /* the connector configuration file */
#define FL_SINK_DIRECT_MAX_COLUMNS 256               /* top-level columns the direct record path handles */
#define FL_SINK_ROW_GROUP_BYTES    (8 * 1024 * 1024)  /* cap on a Parquet row group the sink buffers per open file */
#define FL_SINK_KAFKA_QUEUED_KB    "4096"             /* librdkafka queued.max.messages.kbytes (prefetch, all partitions; bench/README.md) */
#define FL_SINK_KAFKA_FETCH_BYTES  "1048576"          /* librdkafka fetch.max.bytes (one fetch answer, compressed: x10 and more once unpacked) */
#define FL_SINK_KAFKA_FETCH_MIN_BYTES "1048576"     /* librdkafka fetch.min.bytes: the broker holds a fetch until this much ... */
#define FL_SINK_KAFKA_FETCH_WAIT_DIV 10              /* ... or a tenth of the commit interval (10-500 ms) */
#define FL_SINK_HANDOFF_MAX_SCHEMA (1024 * 1024)       /* a Kafka Connect control event's Avro schema */
#define FL_SINK_HANDOFF_MAX_REF    4096               /* ... its table reference, joined */
#define FL_SINK_HANDOFF_TIMEOUT_MS 60000              /* reading the control topic to its end */
#define FL_SINK_HANDOFF_MAX_FILES  100000             /* ... and the data files it may name */
#define FL_SINK_KICK_EVERY_MS      20                 /* librdkafka < 2.1: a drained prefetch refetched at most this often ... */
#define FL_SINK_KICK_WINDOW_MS     200                /* ... while a full poll was this recent (sink.c kick_fetcher) */
#define FL_SINK_KAFKA_QUEUE_BACKOFF_MS "20"          /* librdkafka fetch.queue.backoff.ms (2.1+) */
#define FL_SINK_MEMORY_DEFAULT     (128LL * 1024 * 1024) /* floe.memory.max-bytes when not set */
#define FL_SINK_BATCH_BYTES        (4 * 1024 * 1024)  /* ... or value bytes, whichever first */
#define FL_SINK_MALLOC_TRIM_THRESHOLD (64 * 1024 * 1024) /* floe sink: free heap top kept up to this much */
#define FL_SINK_POLL_BATCH         256                /* records taken from librdkafka's queue in one call */
#define FL_SINK_BATCH_ROWS         1024               /* rows buffered per table before they go to Parquet */
#define FL_SINK_MAX_ANCESTRY       100000             /* snapshots walked back for a table's sink offsets */
#define FL_SINK_ABSENT_TABLE_MS    10000              /* a missing table is looked up again after */
#define FL_SINK_MAX_SCHEMA_BYTES   (1024 * 1024)      /* one schema registry answer */
#define FL_SINK_MAX_SCHEMAS        4096               /* schema ids cached (Avro input) */
#define FL_SINK_MAX_UNKNOWN_SCHEMAS 256               /* schema ids the registry does not have, remembered */
#define FL_SINK_UNKNOWN_SCHEMA_TTL_MS 60000           /* ... for this long before it is asked again */
#define FL_SINK_MAX_TABLES         1024               /* tables one process writes at once (dynamic routing) */
#define FL_SINK_RETRY_MAX_MS       5000               /* longest wait between attempts while the catalog is down */
#define FL_SINK_TX_ATTEMPTS        16                 /* a multi-table transaction refused (409) and re-based, at most */
#define FL_SINK_METRICS_MAX_PARTITIONS 100000      /* partitions whose held offset /metrics remembers */
#define FL_SINK_METRICS_MAX_CONNECTIONS 64          /* connections to floe sink's metrics listener */
#define FL_SINK_SEEK_ATTEMPTS      5                  /* a rewind's seek of a partition tried, at most, before the sink stops */

#define FL_WAREHOUSE_SWEEP_LEASE_MS (6 * 3600 * 1000LL) /* an abandoned warehouse claimed for its purge */
#define FL_WAREHOUSE_REGISTER_LEASE_MS 60000         /* ... or for a registerTable adopting it */
#define FL_STALE_UPLOAD_S          (7 * 24 * 3600)   /* multipart uploads swept after */
#endif
