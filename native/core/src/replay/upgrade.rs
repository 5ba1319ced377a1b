//! The TLS upgrade of a lent stream: tokio-postgres negotiates TLS, the handshake runs on our
//! socket (tokio-postgres-rustls, the connector the tokio-postgres path uses) and the encrypted
//! stream is lent in its place.

use std::future::Future;
use std::pin::Pin;

use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::lend::Tap;
use super::stream::{Plain, Stream};

/// The TLS connector tokio-postgres is given: runs the handshake on the socket it was lent and
/// lends the encrypted stream in its place, with a fresh count of messages.
pub struct Upgrade {
    pub make: MakeRustlsConnect,
    pub hostname: String,
    pub tap: Tap,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl TlsConnect<Tap> for Upgrade {
    type Stream = Tap;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Tap, BoxError>> + Send>>;

    fn connect(mut self, raw: Tap) -> Self::Future {
        Box::pin(async move {
            let plain = raw.take_plain()?;
            drop(raw);
            let connector =
                MakeTlsConnect::<Plain>::make_tls_connect(&mut self.make, &self.hostname)?;
            let tls = TlsConnect::<Plain>::connect(connector, plain).await?;
            self.tap.lend_again(Stream::Tls(Box::new(tls)));
            Ok(self.tap)
        })
    }
}
