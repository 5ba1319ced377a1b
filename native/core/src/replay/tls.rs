//! libpq's TLS options on top of tokio-postgres.
//!
//! tokio-postgres understands `sslmode=disable|prefer|require` only, and rejects `verify-ca`,
//! `verify-full` and `sslrootcert`. Users paste libpq connection strings, so we take those options
//! out before tokio-postgres parses the rest, and give each mode libpq's meaning:
//!
//! | sslmode | encryption | certificate check |
//! |---|---|---|
//! | `disable` | never | — |
//! | `allow`, `prefer` (default) | if the server offers it | none (as libpq) |
//! | `require` | always | none (as libpq: cloud CAs such as RDS's are not in system roots) |
//! | `verify-ca` | always | chain to `sslrootcert` (or the system roots) |
//! | `verify-full` | always | chain and host name |

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error as TlsError, SignatureScheme};
use rustls_pki_types::pem::PemObject;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    None,
    Ca,
    Full,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    pub verify: Verify,
    pub root_cert: Option<PathBuf>,
}

/// Removes `sslrootcert` and downgrades `verify-*` to `require` for tokio-postgres, returning what
/// was taken out. Works on URLs and on `key=value` strings.
pub fn split_tls_options(conninfo: &str) -> (String, TlsOptions) {
    let mut opts = TlsOptions {
        verify: Verify::None,
        root_cert: None,
    };
    let trimmed = conninfo.trim();
    if trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://") {
        let Some((base, query)) = trimmed.split_once('?') else {
            return (trimmed.to_string(), opts);
        };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            take_tls_option(k, &percent_decode(v), pair, &mut opts, &mut kept);
        }
        let rebuilt = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (rebuilt, opts);
    }
    let mut out = Vec::new();
    for (key, raw, value) in kv_tokens(trimmed) {
        take_tls_option(&key, &value, &raw, &mut opts, &mut out);
    }
    (out.join(" "), opts)
}

/// Moves one libpq TLS option into `opts` and pushes what tokio-postgres should see instead
/// (`raw`, the option as written, when it is not a TLS option we handle).
fn take_tls_option(
    key: &str,
    value: &str,
    raw: &str,
    opts: &mut TlsOptions,
    out: &mut Vec<String>,
) {
    match (key, value) {
        ("sslrootcert", path) => opts.root_cert = Some(PathBuf::from(path)),
        ("sslmode", "verify-full") => {
            opts.verify = Verify::Full;
            out.push("sslmode=require".to_string());
        }
        ("sslmode", "verify-ca") => {
            opts.verify = Verify::Ca;
            out.push("sslmode=require".to_string());
        }
        ("sslmode", "allow") => out.push("sslmode=prefer".to_string()),
        _ => out.push(raw.to_string()),
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `key = value` tokens of a libpq keyword string: (key, the token as written, unquoted value).
/// Anything unparseable is passed through for tokio-postgres to report.
fn kv_tokens(s: &str) -> Vec<(String, String, String)> {
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < chars.len() {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && chars[i] != '=' && !chars[i].is_whitespace() {
            i += 1;
        }
        let key: String = chars[start..i].iter().collect();
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i >= chars.len() || chars[i] != '=' {
            out.push((key.clone(), key, String::new()));
            continue;
        }
        i += 1;
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < chars.len() && chars[i] == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                value.push(chars[i]);
                i += 1;
            }
            i += 1;
        } else {
            while i < chars.len() && !chars[i].is_whitespace() {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                value.push(chars[i]);
                i += 1;
            }
        }
        let raw: String = chars[start..i.min(chars.len())].iter().collect();
        out.push((key, raw, value));
    }
    out
}

/// Accepts any certificate (libpq's `prefer`/`require`) but still checks the handshake
/// signatures, so the session is encrypted to whoever holds the certificate's key.
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the host name is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        e: &CertificateDer<'_>,
        i: &[CertificateDer<'_>],
        n: &ServerName<'_>,
        o: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        match self.0.verify_server_cert(e, i, n, o, now) {
            Err(TlsError::InvalidCertificate(CertificateError::NotValidForName))
            | Err(TlsError::InvalidCertificate(CertificateError::NotValidForNameContext {
                ..
            })) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls12_signature(m, c, d)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls13_signature(m, c, d)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Builds the rustls configuration for `opts`.
pub fn client_config(opts: &TlsOptions) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    if opts.verify == Verify::None {
        return Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth());
    }
    let mut roots = rustls::RootCertStore::empty();
    match &opts.root_cert {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("cannot read sslrootcert {}: {e}", path.display()))?;
            for cert in certs {
                let cert =
                    cert.map_err(|e| format!("cannot read sslrootcert {}: {e}", path.display()))?;
                roots.add(cert).map_err(|e| {
                    format!(
                        "sslrootcert {} holds an unusable certificate: {e}",
                        path.display()
                    )
                })?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                // A malformed system certificate is skipped, as every TLS client does.
                let _ = roots.add(cert);
            }
        }
    }
    let webpki =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| format!("cannot build the certificate verifier: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = if opts.verify == Verify::Ca {
        Arc::new(ChainOnly(webpki))
    } else {
        webpki
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_and_root_cert_are_taken_out_of_urls() {
        let (s, o) = split_tls_options("postgres://u:p@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x");
        assert_eq!(
            s,
            "postgres://u:p@h:5/db?sslmode=require&application_name=x"
        );
        assert_eq!(
            o,
            TlsOptions {
                verify: Verify::Full,
                root_cert: Some("/tmp/ca.pem".into())
            }
        );
        let (s, o) = split_tls_options("postgresql://h/db?sslmode=verify-ca");
        assert_eq!(
            (s.as_str(), o.verify),
            ("postgresql://h/db?sslmode=require", Verify::Ca)
        );
        let (s, o) = split_tls_options("postgresql://h/db");
        assert_eq!((s.as_str(), o.verify), ("postgresql://h/db", Verify::None));
    }

    #[test]
    fn verify_modes_and_root_cert_are_taken_out_of_keyword_strings() {
        let (s, o) = split_tls_options(
            "host=h port=5 sslmode=verify-full sslrootcert='/my dir/ca.pem' password='a b'",
        );
        assert_eq!(s, "host=h port=5 sslmode=require password='a b'");
        assert_eq!(o.root_cert, Some(PathBuf::from("/my dir/ca.pem")));
        assert_eq!(o.verify, Verify::Full);
        let (s, _) = split_tls_options("host = h sslmode = allow");
        assert_eq!(s, "host = h sslmode=prefer");
    }
}
