//! libpq's sslmode semantics against a server with TLS on and a certificate from a test CA.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use pg_retest_core::replay::{replay, ReplayError, ReplayOptions, RunStatus};
use pg_retest_core::wkl::QueryKind;
use pg_retest_core::workload::{Workload, WorkloadBuilder, WorkloadInfo};
use support::TestServer;
use tokio_util::sync::CancellationToken;

/// A CA and a server certificate valid only for the name `db.internal`.
fn make_certs(dir: &Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl is installed");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
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
    let _ = Command::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(dir)
        .status();
    let _ = Command::new("chmod")
        .arg("600")
        .arg(dir.join("server.key"))
        .status();
}

fn workload() -> Arc<Workload> {
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
    Arc::new(b.finish())
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmodes_mean_what_they_mean_in_libpq() {
    let certs = tempfile::Builder::new()
        .prefix("pgretest-tls-")
        .tempdir_in("/tmp")
        .unwrap();
    make_certs(certs.path());
    let cert = certs.path().join("server.pem").display().to_string();
    let key = certs.path().join("server.key").display().to_string();
    let server = TestServer::start(&[
        ("ssl", "on"),
        ("ssl_cert_file", &cert),
        ("ssl_key_file", &key),
    ]);
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
