//! The floor of the replay benchmark: the least CPU a client can spend per statement on this
//! machine (used by `npm run bench -- --floor`, see docs/benchmark.md).
//!
//! ```text
//! bench_floor --port P [--host 127.0.0.1|/socket/dir] [--user postgres] [--dbname bench]
//!             [--sessions 16] [--threads 2] [--seconds 15] [--io epoll|io_uring|tokio] [--seed S]
//!             [--pin on|off]
//! ```
//!
//! It runs pgbench's `-S` statements (`SELECT abalance FROM pgbench_accounts WHERE aid = <random>;`,
//! simple-query protocol, one connection per session, each session waiting for its answer before
//! sending the next) for `--seconds`, like `pgbench -T`, and does nothing else: no workload file,
//! no per-statement records, no timing, no async runtime. Its sessions share `--threads` threads,
//! each an event loop over its sockets: `epoll` (a send, a receive and a shared wait per statement,
//! what any readiness-based client does) or `io_uring` (sends and receives queued and reaped in
//! batches, one system call per loop turn); or, with `tokio`, each session is a task on a
//! current-thread Tokio runtime per thread, as the replay engine's sessions are. The figures say
//! how far below pgbench a client's CPU can go at all, what io_uring alone changes, and what the
//! async runtime costs, so that the replay engine's own cost can be read against them. Not part
//! of the product. Its threads are kept on one CPU each, as the engine's are (`--pin off` leaves
//! them to the scheduler).
//!
//! It speaks only to a server with `trust` authentication (the bench's throwaway server) and
//! exits non-zero on any error; with exit status 3 when io_uring is not available here (kernel,
//! seccomp policy or `kernel.io_uring_disabled`), so the bench can report it as such.

use std::process::ExitCode;

#[path = "support/args.rs"]
mod args;

#[path = "../src/replay/affinity.rs"]
#[allow(dead_code)]
mod affinity;

#[cfg(target_os = "linux")]
mod floor {
    use std::io::{self, Read, Write};
    use std::net::TcpStream;
    use std::os::fd::{AsRawFd, RawFd};
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    use pg_retest_core::seeded::SplitMix64;

    /// Accounts created by `pgbench -i -s 10`.
    const ACCOUNTS: u64 = 1_000_000;

    pub struct Target {
        pub host: String,
        pub port: u16,
        pub user: String,
        pub dbname: String,
    }

    /// A connection over TCP, or over the Unix-domain socket in the directory `--host` names.
    enum Sock {
        Tcp(TcpStream),
        Unix(UnixStream),
    }

    impl Sock {
        fn open(t: &Target) -> io::Result<Sock> {
            if t.host.starts_with('/') {
                let path = format!("{}/.s.PGSQL.{}", t.host.trim_end_matches('/'), t.port);
                return UnixStream::connect(path).map(Sock::Unix);
            }
            let sock = TcpStream::connect((t.host.as_str(), t.port))?;
            sock.set_nodelay(true)?;
            Ok(Sock::Tcp(sock))
        }

        fn try_clone(&self) -> io::Result<Sock> {
            match self {
                Sock::Tcp(s) => s.try_clone().map(Sock::Tcp),
                Sock::Unix(s) => s.try_clone().map(Sock::Unix),
            }
        }

        fn set_nonblocking(&self, on: bool) -> io::Result<()> {
            match self {
                Sock::Tcp(s) => s.set_nonblocking(on),
                Sock::Unix(s) => s.set_nonblocking(on),
            }
        }
    }

    impl AsRawFd for Sock {
        fn as_raw_fd(&self) -> RawFd {
            match self {
                Sock::Tcp(s) => s.as_raw_fd(),
                Sock::Unix(s) => s.as_raw_fd(),
            }
        }
    }

    impl Read for Sock {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self {
                Sock::Tcp(s) => s.read(buf),
                Sock::Unix(s) => s.read(buf),
            }
        }
    }

    impl Write for Sock {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            match self {
                Sock::Tcp(s) => s.write(buf),
                Sock::Unix(s) => s.write(buf),
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// One connection: the query being sent and what has arrived of its answer.
    pub struct Session {
        sock: Sock,
        rng: SplitMix64,
        out: Vec<u8>,
        sent: usize,
        input: Vec<u8>,
        filled: usize,
        pub done: u64,
    }

    pub fn connect(t: &Target, seed: u64) -> Result<Session, String> {
        let mut sock =
            Sock::open(t).map_err(|e| format!("cannot connect to {}:{}: {e}", t.host, t.port))?;
        let mut startup = vec![0, 0, 0, 0, 0, 3, 0, 0];
        for (k, v) in [("user", &t.user), ("database", &t.dbname)] {
            startup.extend_from_slice(k.as_bytes());
            startup.push(0);
            startup.extend_from_slice(v.as_bytes());
            startup.push(0);
        }
        startup.push(0);
        let len = startup.len() as u32;
        startup[..4].copy_from_slice(&len.to_be_bytes());
        sock.write_all(&startup).map_err(|e| e.to_string())?;
        let mut s = Session {
            sock,
            rng: SplitMix64::new(seed),
            out: Vec::with_capacity(128),
            sent: 0,
            input: vec![0; 8192],
            filled: 0,
            done: 0,
        };
        // Up to the first ReadyForQuery: AuthenticationOk, parameters, the backend's key.
        loop {
            let n = s
                .sock
                .read(&mut s.input[s.filled..])
                .map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the server closed the connection during start-up".into());
            }
            s.filled += n;
            match s.take_messages(true)? {
                true => return Ok(s),
                false => s.grow(),
            }
        }
    }

    impl Session {
        /// The next statement, in `out`.
        fn next_query(&mut self) {
            let aid = self.rng.next_u64() % ACCOUNTS + 1;
            self.out.clear();
            self.out.extend_from_slice(b"Q\0\0\0\0");
            let _ = write!(
                self.out,
                "SELECT abalance FROM pgbench_accounts WHERE aid = {aid};\0"
            );
            let len = (self.out.len() - 1) as u32;
            self.out[1..5].copy_from_slice(&len.to_be_bytes());
            self.sent = 0;
        }

        /// Consumes the complete messages received; true once a ReadyForQuery has ended the
        /// answer. Rows and tags are skipped: only errors and the end matter here.
        fn take_messages(&mut self, startup: bool) -> Result<bool, String> {
            let mut at = 0;
            let mut ready = false;
            while self.filled - at >= 5 {
                let tag = self.input[at];
                let len =
                    u32::from_be_bytes(self.input[at + 1..at + 5].try_into().unwrap()) as usize;
                if self.filled - at < 1 + len {
                    break;
                }
                match tag {
                    b'E' => return Err(server_error(&self.input[at + 5..at + 1 + len])),
                    b'R' if startup => {
                        let code =
                            u32::from_be_bytes(self.input[at + 5..at + 9].try_into().unwrap());
                        if code != 0 {
                            return Err(format!(
                                "the server asks for authentication (method {code}); bench_floor \
                                 only speaks to a server with trust authentication"
                            ));
                        }
                    }
                    b'Z' => ready = true,
                    _ => {}
                }
                at += 1 + len;
            }
            self.input.copy_within(at..self.filled, 0);
            self.filled -= at;
            Ok(ready)
        }

        /// Room for a message longer than the buffer.
        fn grow(&mut self) {
            if self.filled == self.input.len() {
                self.input.resize(self.input.len() * 2, 0);
            }
        }
    }

    /// An ErrorResponse as "message (SQLSTATE)".
    fn server_error(body: &[u8]) -> String {
        let field = |code: u8| {
            body.split(|&b| b == 0)
                .find(|f| f.first() == Some(&code))
                .map(|f| String::from_utf8_lossy(&f[1..]).into_owned())
                .unwrap_or_default()
        };
        format!(
            "the server answered with an error: {} ({})",
            field(b'M'),
            field(b'C')
        )
    }

    /// Readiness: send whole, then wait with the thread's other sessions in `epoll_wait`.
    pub fn run_epoll(sessions: &mut [Session], until: Instant) -> Result<(), String> {
        // SAFETY (all blocks below): plain system calls on descriptors these sessions own, with
        // buffers that outlive each call.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            return Err(format!("epoll_create1: {}", io::Error::last_os_error()));
        }
        for (k, s) in sessions.iter_mut().enumerate() {
            s.sock.set_nonblocking(true).map_err(|e| e.to_string())?;
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: k as u64,
            };
            if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.sock.as_raw_fd(), &mut ev) } < 0
            {
                return Err(format!("epoll_ctl: {}", io::Error::last_os_error()));
            }
            s.next_query();
            send_all(s)?;
        }
        let mut live = sessions.len();
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; sessions.len()];
        let result = (|| {
            while live > 0 {
                let n =
                    unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, -1) };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(format!("epoll_wait: {e}"));
                }
                for ev in &events[..n as usize] {
                    let s = &mut sessions[ev.u64 as usize];
                    match s.sock.read(&mut s.input[s.filled..]) {
                        Ok(0) => return Err("the server closed a connection".into()),
                        Ok(n) => s.filled += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                        Err(e) => return Err(format!("receive: {e}")),
                    }
                    if !s.take_messages(false)? {
                        s.grow();
                        continue;
                    }
                    s.done += 1;
                    if Instant::now() >= until {
                        unsafe {
                            libc::epoll_ctl(
                                ep,
                                libc::EPOLL_CTL_DEL,
                                s.sock.as_raw_fd(),
                                std::ptr::null_mut(),
                            )
                        };
                        live -= 1;
                        continue;
                    }
                    s.next_query();
                    send_all(s)?;
                }
            }
            Ok(())
        })();
        unsafe { libc::close(ep) };
        result
    }

    /// A query message is far smaller than a socket's send buffer, which is empty while the
    /// session waits for its answer: a non-blocking send takes it whole or the bench is wrong.
    fn send_all(s: &mut Session) -> Result<(), String> {
        s.sock.write_all(&s.out).map_err(|e| format!("send: {e}"))
    }

    pub enum UringError {
        Unavailable(String),
        Failed(String),
    }

    /// Completion-based: each turn submits the sends and receives queued since the last one and
    /// waits for at least one completion, in one `io_uring_enter`.
    pub fn run_uring(sessions: &mut [Session], until: Instant) -> Result<(), UringError> {
        use io_uring::{opcode, squeue, types, IoUring};
        const SEND: u64 = 0;
        const RECV: u64 = 1;
        let failed = UringError::Failed;
        let mut ring = IoUring::builder()
            .setup_single_issuer()
            .setup_coop_taskrun()
            .build((2 * sessions.len()).next_power_of_two().max(8) as u32)
            .map_err(|e| UringError::Unavailable(format!("io_uring_setup: {e}")))?;
        let send = |s: &Session, k: usize| {
            opcode::Send::new(
                types::Fd(s.sock.as_raw_fd()),
                s.out[s.sent..].as_ptr(),
                (s.out.len() - s.sent) as u32,
            )
            .build()
            .user_data(((k as u64) << 1) | SEND)
        };
        let recv = |s: &mut Session, k: usize| {
            let free = s.input.len() - s.filled;
            opcode::Recv::new(
                types::Fd(s.sock.as_raw_fd()),
                s.input[s.filled..].as_mut_ptr(),
                free as u32,
            )
            .build()
            .user_data(((k as u64) << 1) | RECV)
        };
        // The ring holds two entries per session and each session has at most one send and one
        // receive in flight, so a push never finds it full between submissions.
        let push = |ring: &mut IoUring, e: squeue::Entry| -> Result<(), UringError> {
            // SAFETY: the buffers an entry points into belong to a session that outlives the
            // ring's use of them: every session's receive is reaped before this function returns
            // (the loop ends only when none is in flight) and its `out`/`input` are not touched
            // while an operation on them is queued.
            unsafe { ring.submission().push(&e) }
                .map_err(|_| UringError::Failed("submission queue full".into()))
        };
        for (k, s) in sessions.iter_mut().enumerate() {
            s.next_query();
            push(&mut ring, send(s, k))?;
            push(&mut ring, recv(s, k))?;
        }
        let mut in_flight = 2 * sessions.len();
        let mut completions = Vec::with_capacity(2 * sessions.len());
        while in_flight > 0 {
            ring.submit_and_wait(1)
                .map_err(|e| failed(format!("io_uring_enter: {e}")))?;
            completions.extend(ring.completion().map(|c| (c.user_data(), c.result())));
            for (data, res) in completions.drain(..) {
                in_flight -= 1;
                let k = (data >> 1) as usize;
                let s = &mut sessions[k];
                if res < 0 {
                    let e = io::Error::from_raw_os_error(-res);
                    return Err(failed(format!(
                        "{}: {e}",
                        if data & 1 == SEND { "send" } else { "receive" }
                    )));
                }
                if data & 1 == SEND {
                    s.sent += res as usize;
                    if s.sent < s.out.len() {
                        push(&mut ring, send(s, k))?;
                        in_flight += 1;
                    }
                    continue;
                }
                if res == 0 {
                    return Err(failed("the server closed a connection".into()));
                }
                s.filled += res as usize;
                if s.take_messages(false).map_err(failed)? {
                    s.done += 1;
                    if Instant::now() >= until {
                        continue;
                    }
                    s.next_query();
                    push(&mut ring, send(s, k))?;
                    in_flight += 1;
                } else {
                    s.grow();
                }
                push(&mut ring, recv(s, k))?;
                in_flight += 1;
            }
        }
        Ok(())
    }

    /// Every session a task on this thread's current-thread runtime, over tokio's TcpStream or
    /// UnixStream.
    pub fn run_tokio(sessions: Vec<Session>, until: Instant) -> Result<u64, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
        runtime.block_on(async move {
            let mut set = tokio::task::JoinSet::new();
            for s in sessions {
                set.spawn(session_task(s, until));
            }
            let mut done = 0;
            while let Some(joined) = set.join_next().await {
                done += joined.map_err(|e| e.to_string())??;
            }
            Ok(done)
        })
    }

    async fn session_task(s: Session, until: Instant) -> Result<u64, String> {
        let std_sock = s.sock.try_clone().map_err(|e| e.to_string())?;
        std_sock.set_nonblocking(true).map_err(|e| e.to_string())?;
        match std_sock {
            Sock::Tcp(t) => {
                let sock = tokio::net::TcpStream::from_std(t).map_err(|e| e.to_string())?;
                session_loop(s, sock, until).await
            }
            Sock::Unix(u) => {
                let sock = tokio::net::UnixStream::from_std(u).map_err(|e| e.to_string())?;
                session_loop(s, sock, until).await
            }
        }
    }

    async fn session_loop<S>(mut s: Session, mut sock: S, until: Instant) -> Result<u64, String>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            s.next_query();
            sock.write_all(&s.out)
                .await
                .map_err(|e| format!("send: {e}"))?;
            loop {
                let n = sock
                    .read(&mut s.input[s.filled..])
                    .await
                    .map_err(|e| format!("receive: {e}"))?;
                if n == 0 {
                    return Err("the server closed a connection".into());
                }
                s.filled += n;
                if s.take_messages(false)? {
                    break;
                }
                s.grow();
            }
            s.done += 1;
            if Instant::now() >= until {
                return Ok(s.done);
            }
        }
    }

    pub fn deadline(seconds: u64) -> (Instant, Instant) {
        let start = Instant::now();
        (start, start + Duration::from_secs(seconds))
    }
}

#[cfg(target_os = "linux")]
fn run(argv: &[String]) -> Result<(), (u8, String)> {
    use args::{get, number, on_off, options};
    use floor::UringError;

    let bad = |m: String| (1, m);
    let opts = options(
        argv,
        &[
            "host", "port", "user", "dbname", "sessions", "threads", "seconds", "io", "seed", "pin",
        ],
    )
    .map_err(bad)?;
    let port = number(&opts, "port", None).map_err(bad)?;
    let target = floor::Target {
        host: get(&opts, "host").unwrap_or("127.0.0.1").to_string(),
        port: u16::try_from(port).map_err(|_| bad(format!("--port {port} is out of range")))?,
        user: get(&opts, "user").unwrap_or("postgres").to_string(),
        dbname: get(&opts, "dbname").unwrap_or("bench").to_string(),
    };
    let sessions = number(&opts, "sessions", Some(16)).map_err(bad)? as usize;
    let threads = number(&opts, "threads", Some(2)).map_err(bad)? as usize;
    let seconds = number(&opts, "seconds", Some(15)).map_err(bad)?;
    let seed = number(&opts, "seed", Some(1)).map_err(bad)?;
    let io = get(&opts, "io").unwrap_or("epoll").to_string();
    let pin = on_off(&opts, "pin", true).map_err(bad)?;
    if !["epoll", "io_uring", "tokio"].contains(&io.as_str()) {
        return Err(bad(format!(
            "--io must be epoll, io_uring or tokio, got {io:?}"
        )));
    }
    if sessions == 0 || threads == 0 || threads > sessions {
        return Err(bad(format!(
            "need 1 <= threads <= sessions (got {threads} and {sessions})"
        )));
    }

    let mut groups: Vec<Vec<floor::Session>> = (0..threads).map(|_| Vec::new()).collect();
    for k in 0..sessions {
        groups[k % threads]
            .push(floor::connect(&target, seed.wrapping_add(k as u64)).map_err(bad)?);
    }
    let (start, until) = floor::deadline(seconds);
    let cpus = if pin {
        affinity::allowed_cpus()
    } else {
        Vec::new()
    };
    let handles: Vec<_> = groups
        .into_iter()
        .enumerate()
        .map(|(k, mut group)| {
            let io = io.clone();
            let cpu = (!cpus.is_empty()).then(|| cpus[k % cpus.len()]);
            std::thread::spawn(move || {
                if let Some(cpu) = cpu {
                    affinity::pin_current_thread(cpu);
                }
                if io == "tokio" {
                    return floor::run_tokio(group, until).map_err(|m| (1, m));
                }
                let outcome = if io == "epoll" {
                    floor::run_epoll(&mut group, until).map_err(|m| (1, m))
                } else {
                    floor::run_uring(&mut group, until).map_err(|e| match e {
                        UringError::Unavailable(m) => (3, m),
                        UringError::Failed(m) => (1, m),
                    })
                };
                outcome.map(|()| group.iter().map(|s| s.done).sum::<u64>())
            })
        })
        .collect();
    let mut statements = 0u64;
    for h in handles {
        statements += h
            .join()
            .map_err(|_| bad("a session thread panicked".into()))??;
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "{{\"io\":\"{io}\",\"sessions\":{sessions},\"threads\":{threads},\"statements\":{statements},\
         \"wall_s\":{wall:.6},\"qps\":{:.1}}}",
        statements as f64 / wall
    );
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn run(_: &[String]) -> Result<(), (u8, String)> {
    Err((3, "bench_floor runs on Linux only".into()))
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(&argv) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => {
            eprintln!("bench_floor: {message}");
            ExitCode::from(code)
        }
    }
}
