//! Cancelling what a session is running, as libpq does: a cancel request over a new connection
//! to the server the session reached.

use std::time::Duration;

use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{CancelToken, NoTls};

use super::connect::Tls;
use super::socket::{open_socket, Peer};
use super::stream::Plain;

/// Asks the server to cancel what a session is running, over a connection of its own.
pub struct CancelTarget {
    pub token: CancelToken,
    pub peer: Peer,
    pub port: u16,
    /// The name TLS verifies.
    pub hostname: Option<String>,
    pub tls: Tls,
    pub connect_timeout: Option<Duration>,
}

impl CancelTarget {
    /// Best effort, like libpq's: the server says nothing about whether it worked.
    pub async fn cancel(&self) {
        let Ok(plain) = open_socket(&self.peer, self.port, self.connect_timeout, None).await else {
            return;
        };
        let _ = match &self.tls {
            Tls::Plain => self.token.cancel_query_raw(plain, NoTls).await,
            Tls::Rustls(make) => {
                let mut make = make.clone();
                let host = self.hostname.as_deref().unwrap_or("");
                match MakeTlsConnect::<Plain>::make_tls_connect(&mut make, host) {
                    Ok(connector) => self.token.cancel_query_raw(plain, connector).await,
                    Err(_) => return,
                }
            }
        };
    }
}
