//! The wire-protocol proxy against a real PostgreSQL: what clients send through it is recorded
//! (simple and extended protocol, pipelines, binary parameters, errors, keys) and the workload
//! replays on a fresh copy of the schema.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pg_retest_core::linked::LinkedWorkload;
use pg_retest_core::proxy::{Proxy, ProxyErrorKind, ProxyOptions, ProxySummary};
use pg_retest_core::replay::{ReplayOptions, ReplayReport};
use pg_retest_core::wkl::{self, WorkloadProfile};
use pg_retest_core::workload::Workload;
use support::{fresh_database, replay_to_end, sql};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use tokio_postgres::types::private::BytesMut;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use tokio_postgres::NoTls;
use tokio_util::sync::CancellationToken;

struct Running {
    port: u16,
    stop: CancellationToken,
    task: JoinHandle<Result<ProxySummary, pg_retest_core::proxy::ProxyError>>,
}

impl Running {
    async fn finish(self) -> ProxySummary {
        self.stop.cancel();
        self.task.await.unwrap().unwrap()
    }

    /// A URL to `db` (the database name of `url`) through the proxy.
    fn url(&self, url: &str) -> String {
        let db = database_of(url);
        format!(
            "postgresql://postgres@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }
}

fn database_of(url: &str) -> String {
    let head = url.split('?').next().unwrap();
    head.rsplit('/').next().unwrap().to_string()
}

fn options(target: &str, output: &Path) -> ProxyOptions {
    ProxyOptions {
        listen: "127.0.0.1:0".into(),
        target: target.into(),
        output: output.to_path_buf(),
        duration: None,
        grace: Duration::from_secs(5),
        include_noise: false,
        client_tls: None,
    }
}

async fn start(target: &str, output: &Path) -> Running {
    start_with(options(target, output)).await
}

async fn start_with(options: ProxyOptions) -> Running {
    let proxy = Proxy::bind(options).await.unwrap();
    let port = proxy.local_addr().port();
    let stop = CancellationToken::new();
    let task = tokio::spawn(proxy.run(stop.clone()));
    Running { port, stop, task }
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(conn);
    client
}

async fn replay(path: &Path, conninfo: &str, align_sequences: bool) -> ReplayReport {
    let profile = wkl::read_workload(path).unwrap();
    let w = Arc::new(LinkedWorkload::new(Workload::from_profile(profile)));
    replay_to_end(
        w,
        ReplayOptions {
            conninfo: conninfo.into(),
            speed: 0.0,
            align_sequences,
            ..Default::default()
        },
    )
    .await
}

fn all_sql(p: &WorkloadProfile) -> Vec<String> {
    p.sessions
        .iter()
        .flat_map(|s| s.queries.iter().map(|q| q.sql.clone()))
        .collect()
}

/// A parameter sent as the given binary bytes, whatever the type.
#[derive(Debug)]
struct Raw(Vec<u8>);

impl ToSql for Raw {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    to_sql_checked!();
}

fn words(ws: &[i32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

fn numeric(ws: &[u16]) -> Raw {
    Raw(ws.iter().flat_map(|w| w.to_be_bytes()).collect())
}

const TYPED: &str =
    "CREATE TABLE typed (id bigserial PRIMARY KEY, i2 int2, i4 int4, i8 int8, o oid,
    f4 float4, f8 float8, b bool, n numeric, t text, v varchar(20), c char(5), nm name, by bytea,
    u uuid, d date, tm time, ts timestamp, tz timestamptz, iv interval, j json, jb jsonb,
    ai int4[], at text[], a2 int8[], nul text);
    CREATE TABLE orders (id bigserial PRIMARY KEY, note text NOT NULL UNIQUE);
    CREATE TABLE items (id bigserial PRIMARY KEY, order_id bigint REFERENCES orders (id), n int);";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_parameters_keys_pipelines_and_errors_are_recorded_and_replay() {
    let source = fresh_database("proxy_src").await;
    let fresh = fresh_database("proxy_dst").await;
    for db in [&source, &fresh] {
        sql(db, TYPED).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.wkl");
    let proxy = start(&source, &out).await;
    let c = connect(&proxy.url(&source)).await;

    // Every parameter in binary (tokio-postgres sends all of them so).
    let insert = c
        .prepare(
            "INSERT INTO typed (i2, i4, i8, o, f4, f8, b, n, t, v, c, nm, by, u, d, tm, ts, tz, iv,
             j, jb, ai, at, a2, nul) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
             $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25) RETURNING id",
        )
        .await
        .unwrap();
    let at = SystemTime::UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
    let mut a2 = words(&[2, 0, 20, 2, 1, 2, 1]);
    for v in [1i64, 2, 3, 4] {
        a2.extend_from_slice(&8i32.to_be_bytes());
        a2.extend_from_slice(&v.to_be_bytes());
    }
    let mut interval = 3_000_001i64.to_be_bytes().to_vec();
    interval.extend_from_slice(&words(&[-2, 14]));
    let params: Vec<Box<dyn ToSql + Sync + Send>> = vec![
        Box::new(-7i16),
        Box::new(123_456i32),
        Box::new(3_000_000_000_000i64),
        Box::new(42u32),
        Box::new(1.25f32),
        Box::new(0.1f64),
        Box::new(true),
        Box::new(numeric(&[3, 1, 0x4000, 3, 1, 2345, 6780])),
        Box::new("it's a \\ \"text\"".to_string()),
        Box::new("varchar"),
        Box::new("ab"),
        Box::new("a_name"),
        Box::new(vec![0u8, 1, 39, 255]),
        Box::new(Raw((0u8..16).collect())),
        Box::new(Raw(9_000i32.to_be_bytes().to_vec())),
        Box::new(Raw(45_296_789_000i64.to_be_bytes().to_vec())),
        Box::new(at),
        Box::new(at),
        Box::new(Raw(interval)),
        Box::new(Raw(b"{\"a\": [1, 2.50]}".to_vec())),
        Box::new(Raw(b"\x01{\"b\": null, \"s\": \"it's\"}".to_vec())),
        Box::new(vec![Some(1i32), None, Some(-3)]),
        Box::new(vec!["x,y", "q\"u'o\\te", "NULL"]),
        Box::new(Raw(a2)),
        Box::new(None::<String>),
    ];
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
    let typed_id: i64 = c.query_one(&insert, &refs).await.unwrap().get(0);

    // A transaction whose keys later statements use, pipelined: several queries polled at
    // once go out before the first answer comes back.
    c.batch_execute("BEGIN").await.unwrap();
    let order: i64 = c
        .query_one(
            "INSERT INTO orders (note) VALUES ($1) RETURNING id",
            &[&"first"],
        )
        .await
        .unwrap()
        .get(0);
    let add = c
        .prepare("INSERT INTO items (order_id, n) VALUES ($1, $2)")
        .await
        .unwrap();
    let batch: Vec<_> = (0..20)
        .map(|n| {
            let c = &c;
            let add = &add;
            async move { c.execute(add, &[&order, &n]).await }
        })
        .collect();
    for r in futures_util::future::join_all(batch).await {
        assert_eq!(r.unwrap(), 1);
    }
    c.batch_execute("COMMIT").await.unwrap();
    // A simple query of several statements, an error with its SQLSTATE, a password.
    c.simple_query("SELECT 1; SELECT count(*) FROM items")
        .await
        .unwrap();
    let dup = c
        .execute("INSERT INTO orders (note) VALUES ($1)", &[&"first"])
        .await
        .unwrap_err();
    assert_eq!(dup.code().unwrap().code(), "23505");
    let role = format!("proxy_pw_{}", std::process::id());
    c.batch_execute(&format!(
        "CREATE ROLE {role} PASSWORD 'hunter2-proxy'; DROP ROLE {role}"
    ))
    .await
    .unwrap();
    drop(c);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let summary = proxy.finish().await;

    assert_eq!(summary.capture_method, "proxy");
    assert_eq!(summary.excluded.get("password"), Some(&1), "{summary:?}");
    assert!(summary.not_replayable.is_empty(), "{summary:?}");
    assert_eq!(summary.failed_statements, 1);
    assert_eq!(summary.failed[0].sqlstate, "23505");
    let p = wkl::read_workload(&out).unwrap();
    assert_eq!(p.capture_method, "proxy");
    let sqls = all_sql(&p);
    assert!(!sqls.iter().any(|s| s.contains("hunter2")), "{sqls:?}");
    let items = sqls
        .iter()
        .filter(|s| s.starts_with("INSERT INTO items"))
        .count();
    assert_eq!(items, 20, "{sqls:#?}");
    assert!(
        sqls.contains(&"SELECT 1; SELECT count(*) FROM items".to_string()),
        "{sqls:#?}"
    );
    let queries: Vec<_> = p.sessions.iter().flat_map(|s| &s.queries).collect();
    let producer = queries
        .iter()
        .find(|q| q.sql.starts_with("INSERT INTO orders") && q.response_values.is_some())
        .expect("the order's RETURNING row is recorded");
    assert_eq!(
        producer.response_values.as_ref().unwrap()[0].columns,
        vec![("id".to_string(), order.to_string())]
    );
    let in_txn = queries
        .iter()
        .filter(|q| q.sql.starts_with("INSERT INTO items"))
        .all(|q| q.transaction_id.is_some());
    assert!(in_txn);
    let typed_q = queries
        .iter()
        .find(|q| q.sql.starts_with("INSERT INTO typed"))
        .unwrap();
    assert_eq!(
        typed_q.response_values.as_ref().unwrap()[0].columns[0].1,
        typed_id.to_string()
    );

    // The fresh copy's sequence stands elsewhere and is not aligned: the order gets another
    // id, which only key correlation carries to its items (else their foreign key fails).
    sql(&fresh, "SELECT setval('orders_id_seq', 500)").await;
    let report = replay(&out, &fresh, false).await;
    let keys = report.correlation.as_ref().expect("keys are correlated");
    assert!(keys.substituted >= 20, "{keys:?}");
    assert_eq!(
        (report.totals.errors, report.totals.skipped),
        (1, 0),
        "only the duplicate fails: {:?}",
        report.warnings
    );
    let row = "SELECT row(i2, i4, i8, o, f4, f8, b, n, t, v, c, nm, by, u, d, tm, ts, tz, iv, j, jb, ai, at, a2, nul)::text FROM typed";
    let a = sql(&source, row).await;
    let b = sql(&fresh, row).await;
    let text = |m: &[tokio_postgres::SimpleQueryMessage]| -> Vec<String> {
        m.iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap().to_string()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(text(&a), text(&b));
    assert_eq!(text(&a).len(), 1);
    let orphans = support::scalar(
        &fresh,
        "SELECT count(*) FROM items i JOIN orders o ON o.id = i.order_id WHERE o.note = 'first'",
    )
    .await;
    assert_eq!(orphans, "20", "the items follow their order's replayed id");
}

/// A raw client: startup (trust authentication), then `messages`, read to ReadyForQuery.
async fn raw_session(port: u16, database: &str, messages: &[u8]) -> Vec<u8> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for (k, v) in [("user", "postgres"), ("database", database)] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    s.write_all(&((body.len() + 4) as i32).to_be_bytes())
        .await
        .unwrap();
    s.write_all(&body).await.unwrap();
    read_to_ready(&mut s).await;
    s.write_all(messages).await.unwrap();
    let answer = read_to_ready(&mut s).await;
    s.write_all(&msg(b'X', b"")).await.unwrap();
    answer
}

async fn read_to_ready(s: &mut tokio::net::TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    loop {
        let tag = s.read_u8().await.unwrap();
        let len = s.read_i32().await.unwrap() as usize;
        let mut body = vec![0; len - 4];
        s.read_exact(&mut body).await.unwrap();
        all.push(tag);
        if tag == b'Z' {
            return all;
        }
    }
}

fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_before_one_sync_records_every_statement_up_to_its_error() {
    let source = fresh_database("proxy_pipe").await;
    sql(&source, "CREATE TABLE t (n int)").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.wkl");
    let proxy = start(&source, &out).await;
    let mut wire = parse_message("ins", "INSERT INTO t VALUES (10 / $1::int)");
    for v in ["1", "2", "0", "5"] {
        wire.extend(bind_execute("ins", 0, v.as_bytes()));
    }
    wire.extend(msg(b'S', b""));
    let answer = raw_session(proxy.port, &database_of(&source), &wire).await;
    // The third Bind fails: planning with its value folds `10 / 0`.
    assert_eq!(answer, b"12C2CEZ", "parse, two inserts, the error, ready");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let summary = proxy.finish().await;
    let p = wkl::read_workload(&out).unwrap();
    assert_eq!(
        all_sql(&p),
        vec![
            "INSERT INTO t VALUES (10 / '1'::int)",
            "INSERT INTO t VALUES (10 / '2'::int)",
            "INSERT INTO t VALUES (10 / '0'::int)",
        ]
    );
    assert_eq!(summary.failed[0].sqlstate, "22012");
    assert_eq!(summary.failed[0].statement_index, 2);
    assert_eq!(summary.skipped_after_error, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_copy_and_a_session_cut_mid_transaction() {
    let source = fresh_database("proxy_cancel").await;
    sql(&source, "CREATE TABLE t (n int)").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.wkl");
    let proxy = start(&source, &out).await;
    let url = proxy.url(&source);

    // A cancel request goes to the proxy (the client knows no other address) and on to the
    // server with the server's own key.
    let c = connect(&url).await;
    let token = c.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        token.cancel_query(NoTls).await.unwrap();
    });
    let e = c.simple_query("SELECT pg_sleep(60)").await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "57014");
    canceller.await.unwrap();

    // COPY in both directions.
    let sink = c.copy_in("COPY t FROM STDIN").await.unwrap();
    futures_util::pin_mut!(sink);
    use futures_util::SinkExt;
    sink.send(bytes_of("1\n2\n")).await.unwrap();
    assert_eq!(sink.finish().await.unwrap(), 2);
    let stream = c.copy_out("COPY t TO STDOUT").await.unwrap();
    use futures_util::StreamExt;
    let chunks: Vec<_> = stream.collect().await;
    assert_eq!(chunks.len(), 2);
    drop(c);

    // A client that goes away in the middle of a transaction.
    let c = connect(&url).await;
    c.batch_execute("BEGIN").await.unwrap();
    c.execute("INSERT INTO t VALUES ($1)", &[&7i32])
        .await
        .unwrap();
    drop(c);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let summary = proxy.finish().await;
    assert_eq!(summary.cancel_requests, 1);
    assert_eq!(summary.copy.from_stdin, 1);
    assert_eq!(summary.copy.to_stdout, 1);
    assert_eq!(summary.not_replayable.get("copy_from_stdin"), Some(&1));
    assert!(summary.incomplete);
    let p = wkl::read_workload(&out).unwrap();
    assert_eq!(
        all_sql(&p),
        vec![
            "SELECT pg_sleep(60)",
            "COPY t TO STDOUT",
            "BEGIN",
            "INSERT INTO t VALUES ('7')"
        ]
    );
    assert_eq!(summary.failed[0].sqlstate, "57014");
    let last = p.sessions.last().unwrap();
    assert!(last.queries.iter().all(|q| q.transaction_id.is_some()));
}

fn bytes_of(s: &str) -> tokio_postgres::types::private::BytesMut {
    BytesMut::from(s.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_listen_and_unreachable_targets_are_told_apart() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.wkl");
    let mut o = options(&support::shared_url(), &out);
    o.listen = format!("127.0.0.1:{port}");
    let e = Proxy::bind(o).await.err().unwrap();
    assert_eq!(e.kind, ProxyErrorKind::Input);
    assert!(e.message.contains(&port.to_string()), "{}", e.message);

    // Nothing listens on the port of a listener just closed.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let o = options(
        &format!("postgresql://postgres@127.0.0.1:{closed}/postgres"),
        &out,
    );
    let e = Proxy::bind(o).await.err().unwrap();
    assert_eq!(e.kind, ProxyErrorKind::Target);
    assert!(!e.message.contains('\n'));

    // The shared server has no TLS: a target asking for it is refused. The shared URL may come
    // from the test runner without any sslmode, so the query is replaced, not edited.
    let shared = support::shared_url();
    let url = format!("{}?sslmode=require", shared.split('?').next().unwrap());
    let e = Proxy::bind(options(&url, &out)).await.err().unwrap();
    assert_eq!(e.kind, ProxyErrorKind::Target);
    assert!(e.message.contains("refuses TLS"), "{}", e.message);
}

/// pgbench's own count of transactions, each of 7 statements (tpcb-like), against what the
/// proxy recorded, and the replay of the recording on a fresh copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_in_every_protocol_mode_is_recorded_whole_and_replays() {
    for mode in ["simple", "extended", "prepared"] {
        let source = fresh_database("proxy_bench").await;
        let fresh = fresh_database("proxy_bench_dst").await;
        for db in [&source, &fresh] {
            pgbench(&["-i", "-s", "1", "-q", db.as_str()]);
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("w.wkl");
        let proxy = start(&source, &out).await;
        let through = proxy.url(&source);
        let args = ["-n", "-M", mode, "-c", "2", "-t", "50", &through].map(String::from);
        let log = tokio::task::spawn_blocking(move || {
            pgbench(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .await
        .unwrap();
        assert!(
            log.contains("number of transactions actually processed: 100/100"),
            "{log}"
        );
        let summary = proxy.finish().await;
        let p = wkl::read_workload(&out).unwrap();
        let sqls = all_sql(&p);
        let count = |prefix: &str| sqls.iter().filter(|s| s.starts_with(prefix)).count();
        assert_eq!(
            (
                count("BEGIN"),
                count("UPDATE pgbench_accounts"),
                count("SELECT abalance"),
                count("UPDATE pgbench_tellers"),
                count("UPDATE pgbench_branches"),
                count("INSERT INTO pgbench_history"),
                count("END")
            ),
            (100, 100, 100, 100, 100, 100, 100),
            "{mode}: {summary:?}"
        );
        assert!(
            !sqls.iter().any(|s| s.contains('$')),
            "{mode}: placeholders left"
        );
        let report = replay(&out, &fresh, true).await;
        let coverage = report.totals.ok as f64 / report.totals.captured as f64;
        assert!(
            coverage >= 0.99,
            "{mode}: coverage {coverage}: {:?}",
            report.totals
        );
    }
}

fn pgbench(args: &[&str]) -> String {
    let bin = ["/usr/lib/postgresql/15/bin/pgbench", "pgbench"]
        .into_iter()
        .find(|b| Path::new(b).exists())
        .unwrap_or("pgbench");
    let out = Command::new(bin).args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pgbench {args:?}: {text}");
    text
}

/// A self-signed certificate and its key in `dir`, readable by the server.
fn self_signed(dir: &Path) {
    support::openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
        ],
    );
    support::give_certificates_to_postgres(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_through_the_proxy_to_a_target_that_requires_tls() {
    let certs = tempfile::Builder::new()
        .prefix("pgretest-proxy-tls-")
        .tempdir_in("/tmp")
        .unwrap();
    self_signed(certs.path());
    let cert = certs.path().join("server.pem").display().to_string();
    let key = certs.path().join("server.key").display().to_string();
    let server = support::TestServer::start(&[
        ("ssl", "on"),
        ("ssl_cert_file", cert.as_str()),
        ("ssl_key_file", key.as_str()),
        ("password_encryption", "scram-sha-256"),
    ]);
    // Over TCP only TLS with SCRAM; the test's own setup goes over the Unix socket.
    std::fs::write(
        server.dir.join("data/pg_hba.conf"),
        "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 reject\n",
    )
    .unwrap();
    let local = format!(
        "host={} port={} user=postgres dbname=postgres",
        server.dir.display(),
        server.port
    );
    sql(
        &local,
        "SELECT pg_reload_conf(); CREATE ROLE app LOGIN PASSWORD 'proxy-test-secret'; \
         CREATE TABLE t (id serial PRIMARY KEY, note text); GRANT ALL ON t, t_id_seq TO app",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.wkl");
    let target = format!("host=127.0.0.1 port={} sslmode=require", server.port);
    let proxy = start(&target, &out).await;
    let c = connect(&format!(
        "host=127.0.0.1 port={} user=app password=proxy-test-secret dbname=postgres sslmode=disable",
        proxy.port
    ))
    .await;
    let encrypted: bool = c
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(encrypted, "the proxy's leg to the server is encrypted");
    let id: i32 = c
        .query_one("INSERT INTO t (note) VALUES ($1) RETURNING id", &[&"x"])
        .await
        .unwrap()
        .get(0);
    drop(c);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let summary = proxy.finish().await;
    // The pg_stat_ssl query reads only catalogs: noise, left out as in a log capture.
    assert_eq!(
        (summary.statements, summary.excluded.get("noise")),
        (1, Some(&1))
    );
    let p = wkl::read_workload(&out).unwrap();
    let q = &p.sessions[0].queries[0];
    assert_eq!(q.sql, "INSERT INTO t (note) VALUES ('x') RETURNING id");
    assert_eq!(
        q.response_values.as_ref().unwrap()[0].columns,
        vec![("id".to_string(), id.to_string())]
    );
    assert_eq!(p.sessions[0].user, "app");
    let text = std::fs::read_to_string(dir.path().join("w.wkl.capture.json")).unwrap();
    assert!(!text.contains("proxy-test-secret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_ask_for_tls_get_it_with_a_certificate() {
    let source = fresh_database("proxy_client_tls").await;
    sql(&source, "CREATE TABLE t (n int)").await;
    let certs = tempfile::tempdir().unwrap();
    self_signed(certs.path());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.wkl");
    let mut o = options(&source, &out);
    o.client_tls = Some(pg_retest_core::proxy::ClientTls {
        cert: certs.path().join("server.pem"),
        key: certs.path().join("server.key"),
    });
    let proxy = start_with(o).await;
    let port = proxy.port;
    let db = database_of(&source);
    // psql with sslmode=require fails unless the proxy answers its SSLRequest with TLS.
    let psql = tokio::task::spawn_blocking(move || {
        Command::new("/usr/lib/postgresql/15/bin/psql")
            .arg(format!(
                "host=127.0.0.1 port={port} user=postgres dbname={db} sslmode=require"
            ))
            .args([
                "-X",
                "-q",
                "-c",
                "INSERT INTO t VALUES (1)",
                "-c",
                "\\conninfo",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&psql.stdout).to_string();
    assert!(
        psql.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&psql.stderr)
    );
    assert!(text.contains("SSL connection"), "{text}");
    let summary = proxy.finish().await;
    assert_eq!(summary.statements, 1, "{summary:?}");
    let p = wkl::read_workload(&out).unwrap();
    assert_eq!(all_sql(&p), vec!["INSERT INTO t VALUES (1)"]);

    // A key that is not a key is bad input, named.
    let mut o = options(&source, &out);
    o.client_tls = Some(pg_retest_core::proxy::ClientTls {
        cert: certs.path().join("server.pem"),
        key: certs.path().join("server.pem"),
    });
    let e = Proxy::bind(o).await.err().unwrap();
    assert_eq!(e.kind, ProxyErrorKind::Input);
    assert!(e.message.contains("--tls-key"), "{}", e.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_starts_does_not_hold_the_stop() {
    let source = fresh_database("proxy_idle").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.wkl");
    let mut o = options(&source, &out);
    o.grace = Duration::from_millis(200);
    let proxy = start_with(o).await;
    // Connected, and silent: no startup packet ever comes.
    let _idle = tokio::net::TcpStream::connect(("127.0.0.1", proxy.port))
        .await
        .unwrap();
    let c = connect(&proxy.url(&source)).await;
    c.batch_execute("SELECT 1").await.unwrap();
    // An open session is cut after the grace period too; what it completed is kept.
    let summary = tokio::time::timeout(Duration::from_secs(60), proxy.finish())
        .await
        .expect("the stop does not wait for the silent client");
    assert_eq!(summary.statements, 1);
    assert!(
        summary.warnings.iter().any(|w| w.contains("were cut")),
        "{:?}",
        summary.warnings
    );
    drop(c);
}

/// A Parse of `sql` as statement `name`, no parameter type declared.
fn parse_message(name: &str, sql: &str) -> Vec<u8> {
    let mut parse = cstr(name);
    parse.extend(cstr(sql));
    parse.extend_from_slice(&0i16.to_be_bytes());
    msg(b'P', &parse)
}

/// A Bind of statement `name` to the unnamed portal with one value in `format`, and its Execute.
fn bind_execute(name: &str, format: i16, value: &[u8]) -> Vec<u8> {
    let mut bind = cstr("");
    bind.extend(cstr(name));
    bind.extend_from_slice(&1i16.to_be_bytes());
    bind.extend_from_slice(&format.to_be_bytes());
    bind.extend_from_slice(&1i16.to_be_bytes());
    bind.extend_from_slice(&(value.len() as i32).to_be_bytes());
    bind.extend_from_slice(value);
    bind.extend_from_slice(&0i16.to_be_bytes());
    let mut wire = msg(b'B', &bind);
    let mut exec = cstr("");
    exec.extend_from_slice(&0i32.to_be_bytes());
    wire.extend(msg(b'E', &exec));
    wire
}

/// Parse with no declared type, Bind the value in binary (as node-postgres sends a `Buffer`).
fn untyped_binary_insert(value: &[u8]) -> Vec<u8> {
    let mut wire = parse_message("", "INSERT INTO r (body) VALUES ($1)");
    wire.extend(bind_execute("", 1, value));
    wire.extend(msg(b'S', b""));
    wire
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_value_of_no_declared_type_is_typed_by_asking_the_server() {
    let source = fresh_database("proxy_untyped").await;
    sql(&source, "CREATE TABLE r (body bytea)").await;
    let db = database_of(&source);
    let dir = tempfile::tempdir().unwrap();

    // --target with a user: the proxy asks the server what $1 is (bytea) on its own connection.
    let out = dir.path().join("w.wkl");
    let proxy = start(&source, &out).await;
    let answer = raw_session(proxy.port, &db, &untyped_binary_insert(&[0, 1, 255])).await;
    assert_eq!(answer, b"12CZ");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let summary = proxy.finish().await;
    assert!(summary.not_replayable.is_empty(), "{summary:?}");
    let p = wkl::read_workload(&out).unwrap();
    assert_eq!(
        all_sql(&p),
        vec!["INSERT INTO r (body) VALUES ('\\x0001ff')"]
    );

    // Without a user there is nobody to ask: not replayable, counted, never guessed.
    let port = source.split(':').nth(2).unwrap().split('/').next().unwrap();
    let anonymous = format!("host=127.0.0.1 port={port} sslmode=disable");
    let out = dir.path().join("anonymous.wkl");
    let proxy = start(&anonymous, &out).await;
    raw_session(proxy.port, &db, &untyped_binary_insert(&[7])).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let summary = proxy.finish().await;
    assert_eq!(
        summary
            .not_replayable
            .get("binary_parameter_of_unknown_type"),
        Some(&1),
        "{summary:?}"
    );
    assert!(summary.incomplete);
    assert_eq!(summary.statements, 0);
}
