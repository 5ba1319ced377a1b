//! `startProxy`: the recording proxy (clients in, the target server out, a `.wkl` workload and
//! its `.capture.json` sidecar written when it stops).
//!
//! `startProxy` resolves once the proxy listens and the target has accepted a connection, with a
//! handle: its `address`, `stop()` (the CLI calls it on SIGINT/SIGTERM), and `result()`, which
//! resolves with the summary once the workload is written. The proxy runs as tasks on napi's
//! Tokio runtime, never on the JavaScript thread.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use pg_retest_core::proxy::{ClientTls, Proxy, ProxyError, ProxyErrorKind};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::{BindingError, Code, Settled};
use crate::json::JsonOut;

/// How long open sessions may go on after a stop, by default.
const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// Where to listen, where to relay, what to write.
#[napi(object, object_to_js = false)]
pub struct ProxyOptions {
    /// `HOST:PORT` to listen on (port 0: any free port, see `ProxyHandle.address`).
    pub listen: String,
    /// The server: a libpq URL or keyword string; its host, port and TLS options are used
    /// (clients bring their own user, database and password).
    pub target: String,
    /// The `.wkl` to write; the sidecar goes next to it (`<output>.capture.json`).
    pub output: String,
    /// Stop by itself after this many milliseconds.
    pub duration_ms: Option<f64>,
    /// After a stop, how long open sessions may go on before they are cut (default 10 s).
    pub grace_ms: Option<f64>,
    /// Keep `SET`/`SHOW`/catalog-only introspection (left out by default).
    pub include_noise: Option<bool>,
    /// A PEM certificate chain for clients that ask for TLS (with `tlsKey`); without it they are
    /// answered that the proxy has none.
    pub tls_cert: Option<String>,
    /// The PEM private key of `tlsCert`.
    pub tls_key: Option<String>,
}

fn duration(what: &str, ms: Option<f64>) -> Result<Option<Duration>, BindingError> {
    match ms {
        None => Ok(None),
        Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(Duration::from_secs_f64(v / 1000.0))),
        Some(v) => Err(BindingError::options(format!(
            "{what} must be a number of milliseconds, got {v}"
        ))),
    }
}

fn core_options(o: ProxyOptions) -> Result<pg_retest_core::proxy::ProxyOptions, BindingError> {
    let client_tls = match (o.tls_cert, o.tls_key) {
        (Some(cert), Some(key)) => Some(ClientTls {
            cert: PathBuf::from(cert),
            key: PathBuf::from(key),
        }),
        (None, None) => None,
        _ => {
            return Err(BindingError::options(
                "tlsCert and tlsKey go together: give both, or neither",
            ))
        }
    };
    Ok(pg_retest_core::proxy::ProxyOptions {
        client_tls,
        listen: o.listen,
        target: o.target,
        output: PathBuf::from(o.output),
        duration: duration("durationMs", o.duration_ms)?,
        grace: duration("graceMs", o.grace_ms)?.unwrap_or(DEFAULT_GRACE),
        include_noise: o.include_noise.unwrap_or(false),
    })
}

/// The binding's code for a proxy failure: bad `--listen`/`--target` is the caller's
/// (`E_OPTIONS`), a target that cannot be reached `E_CONNECT`, the output `E_WORKLOAD`.
fn binding_error(e: ProxyError) -> BindingError {
    let code = match e.kind {
        ProxyErrorKind::Input => Code::Options,
        ProxyErrorKind::Target => Code::Connect,
        ProxyErrorKind::Output => Code::Workload,
    };
    BindingError::new(code, e.message)
}

type Outcome = Option<Arc<Result<JsonOut, BindingError>>>;

/// A running proxy.
#[napi]
pub struct ProxyHandle {
    address: String,
    stop: CancellationToken,
    outcome: watch::Receiver<Outcome>,
}

#[napi]
impl ProxyHandle {
    /// The address it listens on (`127.0.0.1:6543`).
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.address.clone()
    }

    /// Stops accepting clients; open sessions may finish within the grace period, then the
    /// workload is written. Safe to call more than once.
    #[napi(catch_unwind)]
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// The capture summary (the sidecar's content), once the workload is written. Rejects with
    /// `E_WORKLOAD` when it cannot be written, `E_INTERNAL` on a bug.
    #[napi(catch_unwind, ts_return_type = "Promise<object>")]
    pub async fn result(&self) -> Settled<JsonOut> {
        let mut outcome = self.outcome.clone();
        let ready = outcome.wait_for(Option::is_some).await;
        Settled(match ready.as_deref() {
            Ok(Some(shared)) => shared.as_ref().clone(),
            _ => Err(BindingError::internal(
                "proxy",
                "the proxy ended without a result",
            )),
        })
    }
}

/// Listens, checks the target once, and starts relaying. Rejects with `E_OPTIONS` (malformed
/// options, a port in use or an address not of this machine) or `E_CONNECT` (the target is
/// unreachable or refuses the TLS its sslmode asks for).
#[napi(
    catch_unwind,
    ts_args_type = "options: ProxyOptions",
    ts_return_type = "Promise<ProxyHandle>"
)]
pub async fn start_proxy(options: ProxyOptions) -> Settled<ProxyHandle> {
    let start = async move {
        let opts = core_options(options)?;
        let proxy = Proxy::bind(opts).await.map_err(binding_error)?;
        let address = proxy.local_addr().to_string();
        let stop = CancellationToken::new();
        let (publish, outcome) = watch::channel::<Outcome>(None);
        let run = proxy.run(stop.clone());
        tokio::spawn(async move {
            // A task of its own, so that a panic becomes an error instead of a hang.
            let result = match tokio::spawn(run).await {
                Ok(Ok(summary)) => JsonOut::to_json("proxy", &summary),
                Ok(Err(e)) => Err(binding_error(e)),
                Err(e) => Err(BindingError::from_join("proxy", e)),
            };
            publish.send_replace(Some(Arc::new(result)));
        });
        Ok(ProxyHandle {
            address,
            stop,
            outcome,
        })
    };
    Settled(start.await)
}
