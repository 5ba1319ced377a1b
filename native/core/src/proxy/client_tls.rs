//! TLS towards the proxy's clients (`--tls-cert`, `--tls-key`): a client that asks for it in its
//! SSLRequest gets `S` and a handshake with this certificate; without them the answer is `N`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls_pki_types::pem::PemObject;
use tokio_rustls::TlsAcceptor;

/// The certificate chain and key to present to clients (PEM files).
#[derive(Debug, Clone)]
pub struct ClientTls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Reads the files into an acceptor; the error names the file and what is wrong with it.
pub fn acceptor(tls: &ClientTls) -> Result<TlsAcceptor, String> {
    let certs = read_certs(&tls.cert)?;
    let key = PrivateKeyDer::from_pem_file(&tls.key).map_err(|e| {
        format!(
            "--tls-key {}: not a PEM private key ({e}); give the key of --tls-cert",
            tls.key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            format!(
                "--tls-cert {} and --tls-key {} do not go together: {e}",
                tls.cert.display(),
                tls.key.display()
            )
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bad = |e: &dyn std::fmt::Display| {
        format!(
            "--tls-cert {}: not a PEM certificate chain ({e})",
            path.display()
        )
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no certificate in it"));
    }
    Ok(certs)
}
