//! The proxy's server: where `--target` points, reached as the replay engine reaches a server
//! (its socket code, its rustls connector and libpq's `sslmode` meanings), but speaking only the
//! opening of the protocol itself: the client's own startup and authentication pass through.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::replay::connect::Tls;
use crate::replay::connect::{error_chain, ConnectFailure};
use crate::replay::socket::{first_accepting, open_socket};
use crate::replay::stream::{Plain, Stream};
use crate::replay::tls::{client_config, split_tls_options, TlsOptions};

/// SSLRequest: length 8, code 1234/5679.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

/// The target server and how to secure connections to it.
pub struct Target {
    config: Config,
    tls_options: TlsOptions,
    tls: Option<MakeRustlsConnect>,
    /// `host:port`, for the profile's `source_host` and messages (never the password).
    pub address: String,
}

impl Target {
    /// Reads a libpq URL or keyword string; only the host, port and TLS options are used.
    pub fn parse(conninfo: &str) -> Result<Target, String> {
        let (rest, tls_options) = split_tls_options(conninfo);
        let config: Config = rest
            .parse()
            .map_err(|e| format!("--target is not a PostgreSQL connection string: {e}"))?;
        let tls = match config.get_ssl_mode() {
            SslMode::Disable => None,
            _ => Some(MakeRustlsConnect::new(client_config(&tls_options)?)),
        };
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            #[cfg(unix)]
            Some(Host::Unix(p)) => p.display().to_string(),
            None => config
                .get_hostaddrs()
                .first()
                .map_or_else(|| "localhost".into(), |a| a.to_string()),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        Ok(Target {
            config,
            tls_options,
            tls,
            address: format!("{host}:{port}"),
        })
    }

    /// Who asks the server for statements' parameter types: `--target`'s user, if it has one.
    pub fn describer(&self) -> super::describe::Describer {
        let tls = Tls::new(&self.config, &self.tls_options).ok();
        super::describe::Describer::new(self.config.clone(), tls)
    }

    fn requires_tls(&self) -> bool {
        self.config.get_ssl_mode() == SslMode::Require
    }

    /// A socket to the server, without TLS (for cancel requests, which PostgreSQL reads before
    /// any encryption).
    pub async fn plain(&self) -> Result<Plain, String> {
        let timeout = self.config.get_connect_timeout().copied();
        first_accepting(&self.config, 0, |peer, port, _| async move {
            open_socket(&peer, port, timeout, Some(&self.config))
                .await
                .map_err(|e| crate::replay::socket::socket_failure(&e))
        })
        .await
        .map_err(|f: ConnectFailure| f.message)
    }

    /// A connection to the server, encrypted as `sslmode` asks: `prefer` when the server offers
    /// TLS, `require` (and `verify-*`) or an error saying the server refused it.
    pub async fn connect(&self) -> Result<Stream, String> {
        let timeout = self.config.get_connect_timeout().copied();
        first_accepting(&self.config, 0, |peer, port, hostname| async move {
            let plain = open_socket(&peer, port, timeout, Some(&self.config))
                .await
                .map_err(|e| crate::replay::socket::socket_failure(&e))?;
            let name = hostname.unwrap_or_else(|| match &peer {
                crate::replay::socket::Peer::Tcp(ip) => ip.to_string(),
                #[cfg(unix)]
                crate::replay::socket::Peer::Unix(_) => "localhost".into(),
            });
            self.secure(plain, &name)
                .await
                .map_err(ConnectFailure::without_sqlstate)
        })
        .await
        .map_err(|f| f.message)
    }

    async fn secure(&self, mut plain: Plain, hostname: &str) -> Result<Stream, String> {
        let Some(make) = &self.tls else {
            return Ok(Stream::Plain(plain));
        };
        let answer = ask_tls(&mut plain)
            .await
            .map_err(|e| format!("TLS negotiation failed: {e}"))?;
        if answer != b'S' {
            if self.requires_tls() {
                return Err(format!(
                    "the server at {} refuses TLS, which the target's sslmode requires",
                    self.address
                ));
            }
            return Ok(Stream::Plain(plain));
        }
        let mut make = make.clone();
        let connector = MakeTlsConnect::<Plain>::make_tls_connect(&mut make, hostname)
            .map_err(|e| format!("TLS setup failed: {}", error_chain(&e)))?;
        let tls = TlsConnect::<Plain>::connect(connector, plain)
            .await
            .map_err(|e| format!("TLS handshake failed: {}", error_chain(&e)))?;
        Ok(Stream::Tls(Box::new(tls)))
    }

    /// Connects once, as a session would (TLS included), and closes: the check made at start.
    pub async fn check(&self) -> Result<(), String> {
        let mut s = self.connect().await?;
        let _ = s.shutdown().await;
        Ok(())
    }
}

async fn ask_tls(plain: &mut Plain) -> io::Result<u8> {
    plain.write_all(&SSL_REQUEST).await?;
    let mut answer = [0u8; 1];
    plain.read_exact(&mut answer).await?;
    Ok(answer[0])
}
