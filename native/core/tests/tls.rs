//! libpq's sslmode semantics against a server with TLS on and a certificate from a test CA.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pg_retest_core::linked::LinkedWorkload;
use pg_retest_core::replay::{replay, Driver, ReplayError, ReplayOptions, RunStatus};
use pg_retest_core::wkl::QueryKind;
use pg_retest_core::workload::{WorkloadBuilder, WorkloadInfo};
use support::TestServer;
use tokio_util::sync::CancellationToken;

/// A CA and a server certificate valid only for the name `db.internal`.
fn make_certs(dir: &Path) {
    let run = |args: &[&str]| support::openssl(dir, args);
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=db.internal",
    ]);
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=DNS:db.internal\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
    support::give_certificates_to_postgres(dir);
}

fn workload() -> Arc<LinkedWorkload> {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "u".into(), "d".into());
    // Fails unless this very connection is encrypted.
    b.push_statement(
        "DO $$ BEGIN IF NOT (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) THEN RAISE EXCEPTION 'not encrypted'; END IF; END $$",
        0,
        1,
        QueryKind::Other,
        None,
    );
    Arc::new(LinkedWorkload::new(b.finish()))
}

async fn try_replay(conninfo: String) -> Result<pg_retest_core::replay::ReplayReport, ReplayError> {
    let mut o = ReplayOptions {
        conninfo,
        speed: 0.0,
        ..Default::default()
    };
    o.connect.window = Duration::from_millis(300);
    replay(workload(), o, None, CancellationToken::new()).await
}

/// A server with TLS on, its certificates in `certs`, and `more` settings.
fn tls_server(certs: &Path, more: &[(&str, &str)]) -> TestServer {
    make_certs(certs);
    let cert = certs.join("server.pem").display().to_string();
    let key = certs.join("server.key").display().to_string();
    let mut settings = vec![
        ("ssl", "on"),
        ("ssl_cert_file", cert.as_str()),
        ("ssl_key_file", key.as_str()),
    ];
    settings.extend_from_slice(more);
    TestServer::start(&settings)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmodes_mean_what_they_mean_in_libpq() {
    let certs = tempfile::Builder::new()
        .prefix("pgretest-tls-")
        .tempdir_in("/tmp")
        .unwrap();
    let server = tls_server(certs.path(), &[]);
    let ca = certs.path().join("ca.pem").display().to_string();
    let base = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres",
        server.port
    );

    // require: encrypted, certificate not checked (as libpq).
    let r = try_replay(format!("{base} sslmode=require")).await.unwrap();
    assert_eq!(
        (r.status, r.totals.ok),
        (RunStatus::Completed, 1),
        "{:?}",
        r.fingerprints[0].errors
    );
    // prefer (also the default): encrypted when the server offers it.
    let r = try_replay(base.clone()).await.unwrap();
    assert_eq!(r.totals.ok, 1);
    // verify-ca: the chain is checked against sslrootcert, the name is not.
    let r = try_replay(format!("{base} sslmode=verify-ca sslrootcert={ca}"))
        .await
        .unwrap();
    assert_eq!(r.totals.ok, 1);
    // verify-full: the name (127.0.0.1) is not in the certificate.
    let err = try_replay(format!("{base} sslmode=verify-full sslrootcert={ca}"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot connect") && err.to_lowercase().contains("certificate"),
        "{err}"
    );
    // verify-ca without the test CA: the system roots do not trust it.
    let err = try_replay(format!("{base} sslmode=verify-ca"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    assert!(err.contains("sslmode"), "the hint names the option: {err}");
    // URL form, with the root given as a query parameter.
    let url = format!(
        "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=verify-ca&sslrootcert={ca}",
        server.port
    );
    assert_eq!(try_replay(url).await.unwrap().totals.ok, 1);
    // disable: plain TCP, so the statement reports it.
    let r = try_replay(format!("{base} sslmode=disable")).await.unwrap();
    assert_eq!(r.totals.errors, 1);
}

/// Sessions authenticate with SCRAM (over TLS and without) and MD5 on both paths: the direct path
/// takes its socket from tokio-postgres only once the server has accepted it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_authenticate_on_both_paths() {
    let certs = tempfile::Builder::new()
        .prefix("pgretest-auth-")
        .tempdir_in("/tmp")
        .unwrap();
    let hba = certs.path().join("pg_hba.conf");
    std::fs::write(
        &hba,
        "local all all trust\n\
         host all scram_user 127.0.0.1/32 scram-sha-256\n\
         host all md5_user 127.0.0.1/32 md5\n\
         host all all 127.0.0.1/32 trust\n",
    )
    .unwrap();
    // (tls_server's certificate step hands the whole directory to the server's user.)
    let server = tls_server(certs.path(), &[("hba_file", &hba.display().to_string())]);
    support::sql(
        &server.url(),
        "CREATE ROLE scram_user LOGIN PASSWORD 'scram-pw';
         SET password_encryption = 'md5';
         CREATE ROLE md5_user LOGIN PASSWORD 'md5-pw';",
    )
    .await;
    let base = format!("host=127.0.0.1 port={} dbname=postgres", server.port);
    for driver in [Driver::Wire, Driver::TokioPostgres] {
        let run = |conninfo: String| {
            let mut o = ReplayOptions {
                conninfo,
                speed: 0.0,
                driver,
                ..Default::default()
            };
            o.connect.window = Duration::from_millis(300);
            replay(workload(), o, None, CancellationToken::new())
        };
        // SCRAM inside TLS (the statement checks that the session is encrypted).
        let r = run(format!(
            "{base} user=scram_user password=scram-pw sslmode=require"
        ))
        .await
        .unwrap();
        assert_eq!(
            (r.status, r.totals.ok),
            (RunStatus::Completed, 1),
            "{driver:?}"
        );
        assert_eq!(r.sessions_completed, 1, "{driver:?}");
        // Plain SCRAM and MD5 without TLS: connected and executed (the statement then reports
        // the unencrypted session).
        for who in [
            "user=scram_user password=scram-pw",
            "user=md5_user password=md5-pw",
        ] {
            let r = run(format!("{base} {who} sslmode=disable")).await.unwrap();
            assert_eq!(
                (r.totals.executed, r.totals.errors, r.sessions_completed),
                (1, 1, 1),
                "{driver:?} {who}"
            );
        }
        // A wrong password is refused before any session, with the server's SQLSTATE.
        let err = run(format!(
            "{base} user=scram_user password=wrong sslmode=require"
        ))
        .await
        .unwrap_err();
        assert!(
            matches!(&err, ReplayError::Connect { sqlstate: Some(s), .. } if s == "28P01"),
            "{err}"
        );
    }
}
