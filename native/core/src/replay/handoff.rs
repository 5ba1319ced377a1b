//! Opening a session for the direct protocol path (`wire.rs`): a socket of our own
//! (`socket.rs`), lent to tokio-postgres for the start-up and authentication (`lend.rs`, with the
//! TLS upgrade in `upgrade.rs`), then handed over with the session's cancel key (`cancel.rs`).
//!
//! TLS is decided per host, as libpq does (none on a socket directory), and
//! `target_session_attrs` is checked by asking the session. The run's own connection
//! (`open_client`) is opened the same way and kept by tokio-postgres, so that it reaches the
//! server the sessions reach.

use std::borrow::Cow;

use tokio_postgres::config::{SslMode, TargetSessionAttrs};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, Config, NoTls};

use super::cancel::CancelTarget;
use super::connect::{ConnectFailure, Tls};
use super::lend::{authenticate, Tap};
use super::socket::{first_accepting, open_socket, socket_failure, Peer};
use super::stream::{Plain, Stream};
use super::upgrade::Upgrade;
use super::wire::WireConn;

/// Opens and authenticates one session on the first host that accepts it.
pub async fn open(tls: &Tls, config: &Config, seed: u64) -> Result<WireConn, ConnectFailure> {
    first_accepting(config, seed, |peer, port, hostname| {
        open_at(tls, config, peer, port, hostname)
    })
    .await
}

/// A tokio-postgres client on the first host that accepts it, reached exactly as the sessions
/// reach theirs: the run's own connection (preflight, sequences, liveness probes), so that it
/// checks the host, socket and TLS the sessions will use. (tokio-postgres's own `connect` applies
/// one sslmode to every host, so with `sslmode=require` it would refuse the socket directory of
/// a mixed host list that the sessions use in the clear.) Its cancel token cannot reach the
/// server (the client was not told where its socket goes); nothing cancels on this connection.
pub async fn open_client(tls: &Tls, config: &Config, seed: u64) -> Result<Client, ConnectFailure> {
    first_accepting(config, seed, |peer, port, hostname| {
        client_at(tls, config, peer, port, hostname)
    })
    .await
}

async fn open_at(
    tls: &Tls,
    config: &Config,
    peer: Peer,
    port: u16,
    hostname: Option<String>,
) -> Result<WireConn, ConnectFailure> {
    let (plain, tls, config) = reach(tls, config, &peer, port).await?;
    let config = config.as_ref();
    let tap = Tap::lend(Stream::Plain(plain));
    let token = match tls {
        Tls::Plain => authenticate(config, &tap, NoTls).await?,
        Tls::Rustls(make) => {
            let upgrade = Upgrade {
                make: make.clone(),
                hostname: hostname.clone().unwrap_or_default(),
                tap: tap.clone(),
            };
            authenticate(config, &tap, upgrade).await?
        }
    };
    let stream = tap.take_back()?;
    let mut conn = WireConn::new(
        stream,
        CancelTarget {
            token,
            peer,
            port,
            hostname,
            tls: tls.clone(),
            connect_timeout: config.get_connect_timeout().copied(),
        },
    );
    check_session_attrs(&mut conn, config.get_target_session_attrs()).await?;
    Ok(conn)
}

/// A socket connected to `peer`, the TLS to use on it, and the config to authenticate with: a
/// socket directory among TCP hosts gets no TLS, as with libpq (see `parse_config`).
async fn reach<'a, 'c>(
    tls: &'a Tls,
    config: &'c Config,
    peer: &Peer,
    port: u16,
) -> Result<(Plain, &'a Tls, Cow<'c, Config>), ConnectFailure> {
    static PLAIN: Tls = Tls::Plain;
    let plain = open_socket(
        peer,
        port,
        config.get_connect_timeout().copied(),
        Some(config),
    )
    .await
    .map_err(|e| socket_failure(&e))?;
    let tls = match peer {
        #[cfg(unix)]
        Peer::Unix(_) => &PLAIN,
        Peer::Tcp(_) => tls,
    };
    let config = if matches!(tls, Tls::Plain) && config.get_ssl_mode() != SslMode::Disable {
        let mut c = config.clone();
        c.ssl_mode(SslMode::Disable);
        Cow::Owned(c)
    } else {
        Cow::Borrowed(config)
    };
    Ok((plain, tls, config))
}

/// `open_client` on one peer: tokio-postgres connects over the socket opened here and keeps it.
async fn client_at(
    tls: &Tls,
    config: &Config,
    peer: Peer,
    port: u16,
    hostname: Option<String>,
) -> Result<Client, ConnectFailure> {
    let (plain, tls, config) = reach(tls, config, &peer, port).await?;
    let config = config.as_ref();
    let client = match tls {
        Tls::Plain => keep(config, plain, NoTls).await?,
        Tls::Rustls(make) => {
            let mut make = make.clone();
            let host = hostname.as_deref().unwrap_or("");
            let connector = MakeTlsConnect::<Plain>::make_tls_connect(&mut make, host)
                .map_err(|e| ConnectFailure::without_sqlstate(format!("TLS: {e}")))?;
            keep(config, plain, connector).await?
        }
    };
    if let Some(refuse) = refused_read_only(config.get_target_session_attrs()) {
        let shown = client
            .simple_query("SHOW transaction_read_only")
            .await
            .map_err(|e| ConnectFailure::from_error(&e))?;
        let read_only = shown.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0),
            _ => None,
        });
        if read_only == Some(refuse) {
            return Err(wrong_session_kind(config.get_target_session_attrs()));
        }
    }
    Ok(client)
}

/// Lets tokio-postgres open a session on `plain` and keep it: its connection half runs on its own
/// task until the client is dropped.
async fn keep<T>(config: &Config, plain: Plain, tls: T) -> Result<Client, ConnectFailure>
where
    T: TlsConnect<Plain>,
    T::Stream: Send + 'static,
{
    let (client, connection) = config
        .connect_raw(plain, tls)
        .await
        .map_err(|e| ConnectFailure::from_error(&e))?;
    tokio::spawn(connection);
    Ok(client)
}

/// `target_session_attrs`, checked as tokio-postgres does: by asking the session.
async fn check_session_attrs(
    conn: &mut WireConn,
    wanted: TargetSessionAttrs,
) -> Result<(), ConnectFailure> {
    let Some(refuse) = refused_read_only(wanted) else {
        return Ok(());
    };
    let read_only = conn.query_value("SHOW transaction_read_only").await?;
    if read_only.as_deref() == Some(refuse) {
        return Err(wrong_session_kind(wanted));
    }
    Ok(())
}

/// The `transaction_read_only` that `wanted` refuses; `None` when it accepts any session.
fn refused_read_only(wanted: TargetSessionAttrs) -> Option<&'static str> {
    match wanted {
        TargetSessionAttrs::ReadWrite => Some("on"),
        TargetSessionAttrs::ReadOnly => Some("off"),
        _ => None,
    }
}

/// The refusal of a session that is not what `target_session_attrs` asks for (tokio-postgres's
/// words).
fn wrong_session_kind(wanted: TargetSessionAttrs) -> ConnectFailure {
    ConnectFailure::without_sqlstate(if wanted == TargetSessionAttrs::ReadWrite {
        "error connecting to server: database does not allow writes".into()
    } else {
        "error connecting to server: database is not read only".into()
    })
}
