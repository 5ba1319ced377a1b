//! Opening a session's socket as tokio-postgres's own `connect` would: every host and `hostaddr`
//! in turn, each resolved address, Unix sockets, `connect_timeout`, TCP_NODELAY, keepalives,
//! `tcp_user_timeout` and `load_balance_hosts`.

use std::future::Future;
use std::io;
use std::net::IpAddr;
#[cfg(unix)]
use std::path::PathBuf;
use std::time::Duration;

use socket2::{SockRef, TcpKeepalive};
use tokio::net::TcpStream;
#[cfg(unix)]
use tokio::net::UnixStream;
use tokio_postgres::config::{Host, LoadBalanceHosts};
use tokio_postgres::Config;

use super::connect::ConnectFailure;
use super::stream::Plain;

/// Where a session's server was reached, to send its cancel request the same way.
#[derive(Clone)]
pub enum Peer {
    Tcp(IpAddr),
    #[cfg(unix)]
    Unix(PathBuf),
}

fn config_failure(message: &str) -> ConnectFailure {
    ConnectFailure::without_sqlstate(format!("invalid configuration: {message}"))
}

pub fn socket_failure(e: &io::Error) -> ConnectFailure {
    ConnectFailure::without_sqlstate(format!("error connecting to server: {e}"))
}

/// Tries `at` on every host and `hostaddr` in turn (shuffled for `load_balance_hosts=random`),
/// each resolved address of a host name, until one accepts; else the last failure.
pub async fn first_accepting<T, F, Fut>(
    config: &Config,
    seed: u64,
    mut at: F,
) -> Result<T, ConnectFailure>
where
    F: FnMut(Peer, u16, Option<String>) -> Fut,
    Fut: Future<Output = Result<T, ConnectFailure>>,
{
    let hosts = config.get_hosts();
    let hostaddrs = config.get_hostaddrs();
    if hosts.is_empty() && hostaddrs.is_empty() {
        return Err(config_failure("both host and hostaddr are missing"));
    }
    if !hosts.is_empty() && !hostaddrs.is_empty() && hosts.len() != hostaddrs.len() {
        return Err(config_failure(&format!(
            "number of hosts ({}) is different from number of hostaddrs ({})",
            hosts.len(),
            hostaddrs.len()
        )));
    }
    let count = hosts.len().max(hostaddrs.len());
    let ports = config.get_ports();
    if ports.len() > 1 && ports.len() != count {
        return Err(config_failure("invalid number of ports"));
    }
    let random = config.get_load_balance_hosts() == LoadBalanceHosts::Random;
    let mut shuffle = Shuffle(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    let mut order: Vec<usize> = (0..count).collect();
    if random {
        shuffle.apply(&mut order);
    }

    let mut last = None;
    for i in order {
        let host = hosts.get(i);
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        // The host name is what TLS verifies, even when `hostaddr` says where to connect.
        let hostname = match host {
            Some(Host::Tcp(h)) => Some(h.clone()),
            _ => None,
        };
        let peers = match (hostaddrs.get(i), host) {
            (Some(ip), _) => vec![Peer::Tcp(*ip)],
            (None, Some(Host::Tcp(name))) => {
                match tokio::net::lookup_host((name.as_str(), port)).await {
                    Ok(addrs) => {
                        let mut peers: Vec<Peer> = addrs.map(|a| Peer::Tcp(a.ip())).collect();
                        if random {
                            shuffle.apply(&mut peers);
                        }
                        peers
                    }
                    Err(e) => {
                        last = Some(socket_failure(&e));
                        continue;
                    }
                }
            }
            #[cfg(unix)]
            (None, Some(Host::Unix(dir))) => vec![Peer::Unix(dir.clone())],
            (None, None) => unreachable!("checked above: every index has a host or a hostaddr"),
        };
        if peers.is_empty() {
            last = Some(socket_failure(&io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve any addresses",
            )));
        }
        for peer in peers {
            match at(peer, port, hostname.clone()).await {
                Ok(conn) => return Ok(conn),
                Err(failure) => last = Some(failure),
            }
        }
    }
    Err(last.expect("at least one host was tried"))
}

/// Connects a socket as tokio-postgres does; `config` adds its TCP options (not for cancel
/// requests, which tokio-postgres also sends without them when it has no socket settings).
pub async fn open_socket(
    peer: &Peer,
    port: u16,
    timeout: Option<Duration>,
    config: Option<&Config>,
) -> io::Result<Plain> {
    async fn within<T>(
        f: impl Future<Output = io::Result<T>>,
        t: Option<Duration>,
    ) -> io::Result<T> {
        match t {
            Some(t) => tokio::time::timeout(t, f).await.unwrap_or_else(|_| {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "connection timed out",
                ))
            }),
            None => f.await,
        }
    }
    match peer {
        Peer::Tcp(ip) => {
            let stream = within(TcpStream::connect((*ip, port)), timeout).await?;
            stream.set_nodelay(true)?;
            if let Some(config) = config {
                let sock = SockRef::from(&stream);
                #[cfg(target_os = "linux")]
                if let Some(t) = config.get_tcp_user_timeout() {
                    sock.set_tcp_user_timeout(Some(*t))?;
                }
                if config.get_keepalives() {
                    let mut keepalive = TcpKeepalive::new().with_time(config.get_keepalives_idle());
                    if let Some(interval) = config.get_keepalives_interval() {
                        keepalive = keepalive.with_interval(interval);
                    }
                    if let Some(retries) = config.get_keepalives_retries() {
                        keepalive = keepalive.with_retries(retries);
                    }
                    sock.set_tcp_keepalive(&keepalive)?;
                }
            }
            Ok(Plain::Tcp(stream))
        }
        #[cfg(unix)]
        Peer::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            Ok(Plain::Unix(
                within(UnixStream::connect(path), timeout).await?,
            ))
        }
    }
}

/// A small xorshift shuffle for `load_balance_hosts=random` (no need for a random crate).
struct Shuffle(u64);

impl Shuffle {
    fn apply<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            items.swap(i, (self.0 % (i as u64 + 1)) as usize);
        }
    }
}
