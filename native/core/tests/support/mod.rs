//! Throwaway PostgreSQL servers for integration tests.
//!
//! Tests never assume a server is running. `shared_url()` uses `PG_RETEST_TEST_URL` when the test
//! runner provides one, otherwise starts one server for this test binary. `TestServer::start`
//! starts a dedicated server (own settings, may be stopped mid-test).
//!
//! The postgres process runs under a tiny shell supervisor that reads its stdin: when the test
//! process ends for any reason (even killed), the pipe closes and the supervisor shuts the server
//! down, so no server outlives the tests.
//!
//! A server's port is free when picked but may be taken before the server binds it (the
//! TypeScript tests start servers side by side): readiness is asked over the server's own socket
//! directory, which no other server answers for, and a server that could not bind its port is
//! started afresh on another.

#![allow(dead_code)]

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub struct TestServer {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    bindir: PathBuf,
}

/// The port was taken before the server could bind it.
struct PortTaken;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn bindir() -> PathBuf {
    if let Ok(dir) = std::env::var("PG_RETEST_PG_BINDIR") {
        return PathBuf::from(dir);
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if p.join("initdb").exists() {
            return p;
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .filter(|p| p.join("initdb").exists())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().expect(
        "no PostgreSQL server binaries found (install postgresql or set PG_RETEST_PG_BINDIR)",
    )
}

/// Runs a PostgreSQL binary, as the `postgres` user when we are root (initdb refuses root).
fn pg_command(bin: &Path, root: bool) -> Command {
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin);
        c
    } else {
        Command::new(bin)
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A port picked free may be taken before the server binds it; each attempt picks another.
const PORT_ATTEMPTS: u32 = 5;

impl TestServer {
    pub fn start(settings: &[(&str, &str)]) -> TestServer {
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            match TestServer::start_once(settings) {
                Ok(server) => return server,
                Err(log) => last_log = log,
            }
        }
        panic!(
            "no test server could bind a port in {PORT_ATTEMPTS} attempts; last log:\n{last_log}"
        );
    }

    /// A server in a fresh directory on a port picked free; `Err` with its log when another
    /// process took the port first (the server is then stopped and its directory removed).
    fn start_once(settings: &[(&str, &str)]) -> Result<TestServer, String> {
        let root = is_root();
        let bindir = bindir();
        let dir = tempfile::Builder::new()
            .prefix("pgretest-")
            .tempdir_in("/tmp")
            .unwrap()
            .keep();
        if root {
            let ok = Command::new("chown")
                .arg("postgres:postgres")
                .arg(&dir)
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown of {} failed", dir.display());
        }
        let data = dir.join("data");
        let out = pg_command(&bindir.join("initdb"), root)
            .args(["-D"])
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let mut args: Vec<String> = vec![
            "-D".into(),
            data.display().to_string(),
            "-p".into(),
            port.to_string(),
            "-c".into(),
            "listen_addresses=127.0.0.1".into(),
            "-c".into(),
            format!("unix_socket_directories={}", dir.display()),
            "-c".into(),
            "fsync=off".into(),
            "-c".into(),
            "synchronous_commit=off".into(),
        ];
        for (k, v) in settings {
            args.push("-c".into());
            args.push(format!("{k}={v}"));
        }
        // Supervisor: start postgres, wait for stdin to close, then fast-shutdown it.
        // It also removes the server's directory, because the shared server lives in a static
        // whose destructor never runs.
        let script = r#"pg="$1"; shift; "$pg" "$@" >"$LOGFILE" 2>&1 & pid=$!; cat >/dev/null; kill -INT $pid 2>/dev/null; wait $pid; rm -rf "$SERVERDIR""#;
        let mut cmd = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "sh", "-c", script, "sh"]);
            c
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", script, "sh"]);
            c
        };
        cmd.arg(bindir.join("postgres"))
            .args(&args)
            .env("LOGFILE", dir.join("server.log"))
            .env("SERVERDIR", &dir);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let server = TestServer {
            port,
            dir,
            child: Some(child),
            stdin,
            bindir,
        };
        match server.wait_ready() {
            Ok(()) => Ok(server),
            Err(PortTaken) => Err(server.log()),
        }
    }

    /// Waits until the server accepts connections; `Err` when it could not bind its port.
    fn wait_ready(&self) -> Result<(), PortTaken> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // Over the socket in the server's own directory: another server that took the port
            // would answer on 127.0.0.1 just as well. Ours creates that socket only once its TCP
            // port is bound.
            let ok = Command::new(self.bindir.join("pg_isready"))
                .arg("-h")
                .arg(&self.dir)
                .args(["-p", &self.port.to_string(), "-U", "postgres", "-q"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                return Ok(());
            }
            // The server logs this, then exits (it listens on that one address only).
            if self.log().contains("could not bind") {
                return Err(PortTaken);
            }
            if Instant::now() > deadline {
                panic!(
                    "test server on port {} did not start; log:\n{}",
                    self.port,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    pub fn url(&self) -> String {
        format!(
            "postgresql://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    /// Simulates a crash: immediate shutdown (no checkpoint, every backend killed at once).
    pub fn stop_immediately(&self) {
        let root = is_root();
        let out = pg_command(&self.bindir.join("pg_ctl"), root)
            .args(["stop", "-m", "immediate", "-D"])
            .arg(self.dir.join("data"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl stop failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The URL of a server shared by the tests of this binary.
pub fn shared_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("PG_RETEST_TEST_URL") {
            return url;
        }
        // Leaked on purpose: lives as long as the test binary; the supervisor stops it at exit.
        let server = Box::leak(Box::new(TestServer::start(&[])));
        server.url()
    })
    .clone()
}

/// Creates a fresh database on the shared server and returns its URL.
pub async fn fresh_database(prefix: &str) -> String {
    let base = shared_url();
    let (client, conn) = tokio_postgres::connect(&base, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let name = format!(
        "{prefix}_{}_{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    with_dbname(&base, &name)
}

pub fn with_dbname(url: &str, db: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let base = match head.rfind('/') {
        Some(i)
            if head[..i].contains("@") || head[..i].ends_with("//") || head[..i].contains(':') =>
        {
            &head[..i]
        }
        _ => head,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

pub async fn sql(url: &str, text: &str) -> Vec<tokio_postgres::SimpleQueryMessage> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client.simple_query(text).await.unwrap()
}

pub async fn scalar(url: &str, text: &str) -> String {
    for m in sql(url, text).await {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            return r.get(0).unwrap_or("NULL").to_string();
        }
    }
    panic!("no row from {text}");
}

/// Replays to the end, or fails the test: a replay must always end (the hang guard), and these
/// tests always give it a target it can start on.
pub async fn replay_to_end(
    w: std::sync::Arc<pg_retest_core::linked::LinkedWorkload>,
    o: pg_retest_core::replay::ReplayOptions,
) -> pg_retest_core::replay::ReplayReport {
    tokio::time::timeout(
        Duration::from_secs(120),
        pg_retest_core::replay::replay(w, o, None, tokio_util::sync::CancellationToken::new()),
    )
    .await
    .expect("replay hung")
    .expect("replay failed to start")
}

/// A TCP relay in front of the server at `url` that goes silent on a connection once that
/// connection's client has sent `marker`: from then on nothing is passed either way, as a server
/// that has hung (or a network path that has died without a reset) looks from the client. Other
/// connections, the cancel requests among them, are relayed as usual (see [`Silence`] for the
/// other ways to go silent).
pub struct SilencingProxy {
    pub url: String,
}

/// How a [`SilencingProxy`] connection goes silent after its marker.
#[derive(Clone, Copy)]
pub enum Silence {
    /// Nothing more is passed either way on that connection.
    Dropped,
    /// The server's bytes are held back this long, then passed on (a slow answer).
    Held(Duration),
    /// As `Dropped`, and every connection accepted after the marker is left unanswered: a
    /// server that has hung entirely, its cancel requests included.
    Hung,
}

impl SilencingProxy {
    pub async fn start(url: &str, marker: &'static str) -> SilencingProxy {
        Self::start_with(url, marker, Silence::Dropped).await
    }

    pub async fn start_with(url: &str, marker: &'static str, how: Silence) -> SilencingProxy {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        use std::sync::Arc;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let config: tokio_postgres::Config = url.parse().unwrap();
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let upstream = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => format!("{h}:{port}"),
            other => panic!("the proxy relays TCP only, not {other:?}"),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let local = listener.local_addr().unwrap().port();
        let hung = Arc::new(AtomicBool::new(false));
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let hung = hung.clone();
                tokio::spawn(async move {
                    if hung.load(SeqCst) {
                        let mut buf = [0u8; 1024];
                        while matches!(client.read(&mut buf).await, Ok(n) if n > 0) {}
                        std::future::pending::<()>().await;
                    }
                    let server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                    let silent = Arc::new(AtomicBool::new(false));
                    let (mut cr, mut cw) = client.into_split();
                    let (mut sr, mut sw) = server.into_split();
                    let up_silent = silent.clone();
                    let up = async move {
                        let mut buf = vec![0u8; 16 * 1024];
                        while let Ok(n) = cr.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            let seen = &buf[..n];
                            if seen.windows(marker.len()).any(|w| w == marker.as_bytes()) {
                                up_silent.store(true, SeqCst);
                                if let Silence::Hung = how {
                                    hung.store(true, SeqCst);
                                }
                            }
                            let passed = matches!(how, Silence::Held(_)) || !up_silent.load(SeqCst);
                            if passed && sw.write_all(seen).await.is_err() {
                                break;
                            }
                        }
                        // Held open: a silent path does not close either.
                        std::future::pending::<()>().await;
                    };
                    let down = async move {
                        let mut buf = vec![0u8; 16 * 1024];
                        let mut held = false;
                        while let Ok(n) = sr.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            if silent.load(SeqCst) {
                                match how {
                                    Silence::Held(d) if !held => {
                                        held = true;
                                        tokio::time::sleep(d).await;
                                    }
                                    Silence::Held(_) => {}
                                    Silence::Dropped | Silence::Hung => continue,
                                }
                            }
                            if cw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                        std::future::pending::<()>().await;
                    };
                    tokio::join!(up, down);
                });
            }
        });
        let mut conninfo = format!(
            "host=127.0.0.1 port={local} user={} dbname={}",
            config.get_user().unwrap_or("postgres"),
            config.get_dbname().unwrap_or("postgres")
        );
        if let Some(p) = config.get_password() {
            conninfo.push_str(&format!(" password={}", String::from_utf8_lossy(p)));
        }
        SilencingProxy { url: conninfo }
    }
}

/// Runs `openssl` in `dir`, for the certificates of a test server; fails the test with its
/// message.
pub fn openssl(dir: &Path, args: &[&str]) {
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
}

/// Hands the certificates in `dir` to the server, which runs as `postgres` and refuses a key
/// that others can read.
pub fn give_certificates_to_postgres(dir: &Path) {
    let _ = Command::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(dir)
        .status();
    let _ = Command::new("chmod")
        .arg("600")
        .arg(dir.join("server.key"))
        .status();
}
